#include "small_blocks.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <array>
#include <utility>

namespace plexus_kernels_cpu {

namespace {

using plexus::StackEntry;

#if defined(__x86_64__) && defined(__GNUC__)
#define PLEXUS_SMALL_BLOCKS 1

/// How many entries ahead B's and C's blocks are prefetched. B streams through a row of B and C
/// comes back to blocks of its row (tens of KB, not all in the first-level cache); with neither
/// prefetched, S-E-like 6x6 blocks in plexus-bench ran about 7 % slower (distance 8: between the
/// two; 16 without C's: as 8).
constexpr std::int64_t kPrefetchAhead = 16;

/// The cache lines of `bytes` bytes from p (p need not be aligned).
inline void prefetch_lines(const double* p, int bytes, bool write) {
  const char* q = reinterpret_cast<const char*>(p);
  for (int o = 0; o < bytes; o += 64) write ? __builtin_prefetch(q + o, 1) : __builtin_prefetch(q + o, 0);
  write ? __builtin_prefetch(q + bytes - 1, 1) : __builtin_prefetch(q + bytes - 1, 0);
}

/// N columns of C and K columns of A as compile-time counts, m (rows) as a mask: each column of
/// a block is one register whose first m lanes are used. Entries sharing their A offset reuse the
/// registers loaded for the first of them. Stops at the first entry of another shape.
template <int N, int K>
__attribute__((target("avx512f"))) std::int64_t run(const StackEntry* s, std::int64_t count, const double* a,
                                                    const double* b, double* c) {
  const int m = s[0].m;
  const auto rows = static_cast<__mmask8>((1u << m) - 1u);
  const auto same_shape = [m](const StackEntry& e) { return e.m == m && e.n == N && e.k == K; };
  std::int64_t i = 0;
  while (i < count && same_shape(s[i])) {
    const std::int64_t ao = s[i].a;
    __m512d av[K];
    for (int l = 0; l < K; ++l) av[l] = _mm512_maskz_loadu_pd(rows, a + ao + std::int64_t{l} * m);
    do {
      const StackEntry& e = s[i];
      if (i + kPrefetchAhead < count) {
        const StackEntry& ahead = s[i + kPrefetchAhead];
        prefetch_lines(b + ahead.b, K * N * 8, false);
        prefetch_lines(c + ahead.c, m * N * 8, true);
      }
      const double* bb = b + e.b;
      double* cc = c + e.c;
      __m512d acc[N];
      // A new block (first) starts from zero, whatever it held: a load under an empty mask reads
      // nothing (no branch to mispredict).
      const __mmask8 keep = e.first != 0 ? __mmask8{0} : rows;
      for (int j = 0; j < N; ++j)
        acc[j] = _mm512_fmadd_pd(av[0], _mm512_set1_pd(bb[j * K]), _mm512_maskz_loadu_pd(keep, cc + j * m));
      for (int l = 1; l < K; ++l)
        for (int j = 0; j < N; ++j) acc[j] = _mm512_fmadd_pd(av[l], _mm512_set1_pd(bb[l + j * K]), acc[j]);
      for (int j = 0; j < N; ++j) _mm512_mask_storeu_pd(cc + j * m, rows, acc[j]);
      ++i;
    } while (i < count && s[i].a == ao && same_shape(s[i]));
  }
  return i;
}

using Table = std::array<std::array<SmallRunFn, kSmallMax>, kSmallMax>;  // [n - 1][k - 1]

template <int N, std::size_t... Ks>
constexpr std::array<SmallRunFn, kSmallMax> row_of(std::index_sequence<Ks...>) {
  return {&run<N, static_cast<int>(Ks) + 1>...};
}

template <std::size_t... Ns>
constexpr Table table_of(std::index_sequence<Ns...>) {
  return {row_of<static_cast<int>(Ns) + 1>(std::make_index_sequence<kSmallMax>{})...};
}

constexpr Table kTable = table_of(std::make_index_sequence<kSmallMax>{});
#else
#define PLEXUS_SMALL_BLOCKS 0
#endif

}  // namespace

bool small_kernels_available() {
#if PLEXUS_SMALL_BLOCKS
  static const bool available = __builtin_cpu_supports("avx512f") != 0;
  return available;
#else
  return false;
#endif
}

SmallRunFn small_run_kernel(int m, int n, int k) {
  if (m < 1 || n < 1 || k < 1 || m > kSmallMax || n > kSmallMax || k > kSmallMax) return nullptr;
  if (!small_kernels_available()) return nullptr;
#if PLEXUS_SMALL_BLOCKS
  return kTable[static_cast<std::size_t>(n - 1)][static_cast<std::size_t>(k - 1)];
#else
  return nullptr;
#endif
}

}  // namespace plexus_kernels_cpu
