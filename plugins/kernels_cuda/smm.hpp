#pragma once
// The device code of the `cuda` kernel, written once for two compilers: nvcc builds the CUDA
// kernels from it (smm_kernels.cu), and the host compiler runs the same thread functions in the
// emulated device of the tests (tests/kernels/emulated_device.cpp), thread by thread, so the
// index arithmetic of every kernel is checked on machines without a GPU.
//
// A kernel is written as phases separated by a barrier (__syncthreads on the device): each phase
// is a function of (block, thread) that the device runs in every thread of a CUDA block and the
// emulation runs in a loop over threads, one phase after the other.
//
//   products of a specialised shape (M, N, K known at compile time; the common block sizes and
//   their mixes, as libsmm_acc generates its kernels): a CUDA block of `Tile<M,N,K>::kThreads`
//   threads takes kGroups stack entries, a group of threads per entry; phase 1 loads the entry's
//   A and B blocks into shared memory, phase 2 computes C's elements (each thread some columns
//   of one row, the K loop unrolled) and adds them to C atomically, since entries of one batch
//   (and of batches on other streams) may add to the same C block.
//   products of any other shape: a CUDA block of kGenericThreads per entry, one phase, operands
//   read from global memory.
//   block norms: a CUDA block of kNormThreads per block; phase 1 sums squares (strided), phase 2
//   thread 0 adds the partial sums and takes the root.
#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__CUDACC__)
#define PLEXUS_HD __host__ __device__
#else
#define PLEXUS_HD
#endif

namespace plexus_cuda {

/// A stack entry as the device reads it: the layout of plexus::StackEntry (checked where both are
/// visible, in plan.cpp), repeated here so the device code includes no host header.
struct DeviceEntry {
  int m, n, k;
  std::int64_t a, b, c;
};

/// A norm task: the Frobenius norm of `size` values from `offset`.
struct NormTask {
  std::int64_t offset, size;
};

/// The block sizes of the specialised kernels: every (m, n, k) with all three in this list
/// (5^3 = 125 kernels). Other shapes use the generic kernel.
inline constexpr int kSmmSizes[] = {5, 6, 13, 23, 32};
inline constexpr int kSmmSizeCount = static_cast<int>(sizeof(kSmmSizes) / sizeof(kSmmSizes[0]));
inline constexpr int kSmmShapes = kSmmSizeCount * kSmmSizeCount * kSmmSizeCount;
inline constexpr int kGenericShape = kSmmShapes;  ///< the shape id of everything else
inline constexpr int kGenericThreads = 128;
inline constexpr int kNormThreads = 64;

constexpr int smm_m(int shape) { return kSmmSizes[shape / (kSmmSizeCount * kSmmSizeCount)]; }
constexpr int smm_n(int shape) { return kSmmSizes[shape / kSmmSizeCount % kSmmSizeCount]; }
constexpr int smm_k(int shape) { return kSmmSizes[shape % kSmmSizeCount]; }

/// The launch geometry of a specialised shape. A thread computes C elements of one row i, in
/// the columns j = its column group + r * kCols: each A value it loads from shared memory serves
/// all its columns, and their sums are independent (kPerThread of them in flight instead of one
/// K-long chain).
template <int M, int N, int K>
struct Tile {
  static constexpr int kElems = M * N;
  /// At most as many column groups as fit in 128 threads with all M rows, and N.
  static constexpr int kColsMax = N < 128 / M ? N : (128 / M > 0 ? 128 / M : 1);
  /// C elements (columns) per thread.
  static constexpr int kPerThread = (N + kColsMax - 1) / kColsMax;
  /// Column groups of an entry: the fewest that give every thread kPerThread columns, so that
  /// few threads idle in the last pass (13x13: 7 groups of 2 columns, not 9 of which 4 idle).
  static constexpr int kCols = (N + kPerThread - 1) / kPerThread;
  /// Threads per entry: one per (row, column group).
  static constexpr int kGroupThreads = M * kCols;
  /// Entries per CUDA block (small shapes share a block, so it has about 128 threads).
  static constexpr int kGroups = 128 / kGroupThreads > 0 ? 128 / kGroupThreads : 1;
  static constexpr int kThreads = kGroups * kGroupThreads;
  static constexpr int kEntryShared = M * K + K * N;  ///< doubles of shared memory per entry
  static constexpr int kShared = kGroups * kEntryShared;
};

/// Phase 1 of a specialised product: thread `tid` of CUDA block `block` copies its share of its
/// entry's A and B blocks to `shared` (Tile::kShared doubles).
template <int M, int N, int K>
PLEXUS_HD inline void smm_load(int block, int tid, const DeviceEntry* stack, std::int64_t count, const double* a,
                               const double* b, double* shared) {
  using T = Tile<M, N, K>;
  const int group = tid / T::kGroupThreads;
  const int lane = tid % T::kGroupThreads;
  const std::int64_t e = std::int64_t{block} * T::kGroups + group;
  if (e >= count) return;
  double* sa = shared + group * T::kEntryShared;
  double* sb = sa + M * K;
  const double* ga = a + stack[e].a;
  const double* gb = b + stack[e].b;
  for (int i = lane; i < M * K; i += T::kGroupThreads) sa[i] = ga[i];
  for (int i = lane; i < K * N; i += T::kGroupThreads) sb[i] = gb[i];
}

/// Phase 2 of a specialised product: thread `tid` computes its C elements (row lane % M, columns
/// lane / M + r * kCols) from shared memory and adds each to C with add(address, value)
/// (atomicAdd on the device).
template <int M, int N, int K, class Add>
PLEXUS_HD inline void smm_compute(int block, int tid, const DeviceEntry* stack, std::int64_t count,
                                  const double* shared, double* c, Add add) {
  using T = Tile<M, N, K>;
  const int group = tid / T::kGroupThreads;
  const int lane = tid % T::kGroupThreads;
  const std::int64_t e = std::int64_t{block} * T::kGroups + group;
  if (e >= count) return;
  const double* sa = shared + group * T::kEntryShared;
  const double* sb = sa + M * K;
  const int i = lane % M;
  const int j0 = lane / M;
  // A thread whose last column lies beyond N computes a copy of column N - 1 there (no branch in
  // the loop) and does not add it.
  const double* col[T::kPerThread];
  double s[T::kPerThread];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < T::kPerThread; ++r) {
    const int j = j0 + r * T::kCols;
    col[r] = sb + (j < N ? j : N - 1) * K;
    s[r] = 0.0;
  }
#if defined(__CUDA_ARCH__)  // the device pass of nvcc (the host compiler does not know the pragma)
#pragma unroll
#endif
  for (int l = 0; l < K; ++l) {
    const double x = sa[i + l * M];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < T::kPerThread; ++r) s[r] += x * col[r][l];
  }
  double* gc = c + stack[e].c;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < T::kPerThread; ++r) {
    const int j = j0 + r * T::kCols;
    if (j < N) add(gc + i + j * M, s[r]);
  }
}

/// CUDA blocks of a specialised launch over `count` entries.
template <int M, int N, int K>
constexpr std::int64_t smm_blocks(std::int64_t count) {
  return (count + Tile<M, N, K>::kGroups - 1) / Tile<M, N, K>::kGroups;
}

/// The generic product (any m, n, k >= 0): CUDA block `block` computes entry `block`; thread `tid`
/// of kGenericThreads takes a strided set of C's elements.
template <class Add>
PLEXUS_HD inline void smm_generic(int block, int tid, const DeviceEntry* stack, const double* a, const double* b,
                                  double* c, Add add) {
  const DeviceEntry e = stack[block];
  const int mn = e.m * e.n;
  for (int idx = tid; idx < mn; idx += kGenericThreads) {
    const int i = idx % e.m;
    const int j = idx / e.m;
    const double* ga = a + e.a + i;
    const double* gb = b + e.b + std::int64_t{j} * e.k;
    double s = 0.0;
    for (int l = 0; l < e.k; ++l) s += ga[std::int64_t{l} * e.m] * gb[l];
    add(c + e.c + idx, s);
  }
}

/// Phase 1 of a norm: thread `tid` sums the squares of its strided values of task `block` into
/// partial[tid] (kNormThreads doubles).
PLEXUS_HD inline void norm_partial(int block, int tid, const NormTask* tasks, const double* data, double* partial) {
  const NormTask t = tasks[block];
  double s = 0.0;
  for (std::int64_t v = tid; v < t.size; v += kNormThreads) s += data[t.offset + v] * data[t.offset + v];
  partial[tid] = s;
}

/// Phase 2 of a norm: thread 0 adds the partial sums and writes the root to out[block].
template <class Sqrt>
PLEXUS_HD inline void norm_finish(int block, int tid, const double* partial, double* out, Sqrt root) {
  if (tid != 0) return;
  double s = 0.0;
  for (int t = 0; t < kNormThreads; ++t) s += partial[t];
  out[block] = root(s);
}

/// Calls f.template operator()<M, N, K>() for a specialised shape id; false for another id.
/// One table for the launcher (smm_kernels.cu) and the emulation.
template <class F, std::size_t... I>
bool dispatch_shape(int shape, F&& f, std::index_sequence<I...>) {
  return ((shape == static_cast<int>(I) ? (f.template operator()<smm_m(I), smm_n(I), smm_k(I)>(), true) : false) ||
          ...);
}
template <class F>
bool dispatch_shape(int shape, F&& f) {
  return dispatch_shape(shape, static_cast<F&&>(f), std::make_index_sequence<kSmmShapes>{});
}

}  // namespace plexus_cuda
