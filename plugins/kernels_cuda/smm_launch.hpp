#pragma once
// The launchers of the `cuda` kernel's device code (smm_kernels.cu, built by nvcc). They take a
// cudaStream_t as void* and return a cudaError_t as int, so this header needs neither CUDA's nor
// plexus's headers and each side is compiled by its own compiler.
#include <cstdint>

#include "smm.hpp"

namespace plexus_cuda {

/// Launches the products of `count` entries of one shape (a specialised id, or kGenericShape) on
/// `stream`: C[e.c] += A[e.a] * B[e.b], atomically. Returns cudaGetLastError() after the launch.
int launch_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a, const double* b,
                    double* c, void* stream);

/// Launches the norms of `count` tasks over `data` into out[0 .. count) on `stream`.
int launch_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out, void* stream);

}  // namespace plexus_cuda
