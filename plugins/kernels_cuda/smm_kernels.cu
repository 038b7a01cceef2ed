// The CUDA kernels of the `cuda` kernel plugin: batched small products (a kernel per specialised
// shape, generated from one template, and a generic one) and block norms. The thread functions
// are in smm.hpp, shared with the host emulation that tests them without a GPU.
#include <cuda_runtime.h>

#include <cstdint>

#include "smm.hpp"
#include "smm_launch.hpp"

namespace plexus_cuda {
namespace {

struct AtomicAdd {
  __device__ void operator()(double* address, double value) const { atomicAdd(address, value); }
};

struct DeviceSqrt {
  __device__ double operator()(double x) const { return sqrt(x); }
};

template <int M, int N, int K>
__global__ void __launch_bounds__(Tile<M, N, K>::kThreads)
    smm_kernel(const DeviceEntry* __restrict__ stack, std::int64_t count, const double* __restrict__ a,
               const double* __restrict__ b, double* c) {
  __shared__ double shared[Tile<M, N, K>::kShared];
  smm_load<M, N, K>(static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), stack, count, a, b, shared);
  __syncthreads();
  smm_compute<M, N, K>(static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), stack, count, shared, c,
                       AtomicAdd{});
}

__global__ void __launch_bounds__(kGenericThreads)
    smm_generic_kernel(const DeviceEntry* __restrict__ stack, const double* __restrict__ a,
                       const double* __restrict__ b, double* c) {
  smm_generic(static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), stack, a, b, c, AtomicAdd{});
}

__global__ void __launch_bounds__(kNormThreads)
    norm_kernel(const NormTask* __restrict__ tasks, const double* __restrict__ data, double* out) {
  __shared__ double partial[kNormThreads];
  norm_partial(static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), tasks, data, partial);
  __syncthreads();
  norm_finish(static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), partial, out, DeviceSqrt{});
}

struct Launch {
  const DeviceEntry* stack;
  std::int64_t count;
  const double* a;
  const double* b;
  double* c;
  cudaStream_t stream;
  template <int M, int N, int K>
  void operator()() const {
    const auto blocks = static_cast<unsigned>(smm_blocks<M, N, K>(count));
    smm_kernel<M, N, K><<<blocks, Tile<M, N, K>::kThreads, 0, stream>>>(stack, count, a, b, c);
  }
};

}  // namespace

int launch_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a, const double* b,
                    double* c, void* stream) {
  if (count <= 0) return cudaSuccess;
  const auto s = static_cast<cudaStream_t>(stream);
  if (!dispatch_shape(shape, Launch{stack, count, a, b, c, s}))
    smm_generic_kernel<<<static_cast<unsigned>(count), kGenericThreads, 0, s>>>(stack, a, b, c);
  return static_cast<int>(cudaGetLastError());
}

int launch_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out, void* stream) {
  if (count <= 0) return cudaSuccess;
  norm_kernel<<<static_cast<unsigned>(count), kNormThreads, 0, static_cast<cudaStream_t>(stream)>>>(tasks, data, out);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace plexus_cuda
