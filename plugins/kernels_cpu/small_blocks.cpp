#include "small_blocks.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <array>
#include <cstdint>
#include <utility>

namespace plexus_kernels_cpu {

namespace {

using plexus::StackEntry;

#if defined(__x86_64__) && defined(__GNUC__)
#define PLEXUS_SMALL_BLOCKS 1

/// How many entries ahead B's and C's blocks are prefetched. B streams through a row of B and C
/// comes back to blocks of its row (tens of KB, not all in the first-level cache); with neither
/// prefetched, S-E-like 6x6 blocks in plexus-bench ran 7-10 % slower (distance 8: between the
/// two; 16 without C's: as 8).
constexpr std::int64_t kPrefetchAhead = 16;

/// The cache lines of `bytes` bytes (at most kMaxBytes) from `offset` doubles after `base`
/// (unaligned). The entry ahead may have another shape than the `bytes` it is given, so the address
/// is formed as an integer: a prefetch beyond an allocation is harmless, pointer arithmetic beyond
/// it is not. The loop runs to the compile-time bound (one prefetch a line, the lines beyond
/// `bytes` repeating its last byte's): with the run-time bound it was a loop of its own, branch and
/// all, in every product, and se-like 6 x 6 products took about 7 % longer in cache.
template <int kMaxBytes>
[[gnu::always_inline]] inline void prefetch_lines(const double* base, std::int64_t offset, int bytes, bool write) {
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(offset) * 8;
  const int last = bytes - 1;
  for (int o = 0; o < kMaxBytes; o += 64) {
    const void* p = reinterpret_cast<const void*>(at + static_cast<std::uintptr_t>(o < last ? o : last));
    write ? __builtin_prefetch(p, 1) : __builtin_prefetch(p, 0);
  }
  const void* end = reinterpret_cast<const void*>(at + static_cast<std::uintptr_t>(last));
  write ? __builtin_prefetch(end, 1) : __builtin_prefetch(end, 0);
}

/// B's and C's blocks of the entry kPrefetchAhead after s[i], if there is one (`b_bytes` and
/// `c_bytes` of them, the current run's shape; at most kMaxB and kMaxC).
template <int kMaxB, int kMaxC>
[[gnu::always_inline]] inline void prefetch_ahead(const StackEntry* s, std::int64_t i, std::int64_t count,
                                                  const double* b, const double* c, int b_bytes, int c_bytes) {
  if (i + kPrefetchAhead >= count) return;
  const StackEntry& ahead = s[i + kPrefetchAhead];
  prefetch_lines<kMaxB>(b, ahead.b, b_bytes, false);
  prefetch_lines<kMaxC>(c, ahead.c, c_bytes, true);
}

// The low lanes of a register by __builtin_shufflevector, and (store_column) the permute under a
// full zeroing mask: GCC 12's casts and unmasked permute pass an undefined vector that
// -Wmaybe-uninitialized reports.
[[gnu::always_inline]] inline __attribute__((target("avx512f"))) __m256d low4(__m512d x) {
  return __builtin_shufflevector(x, x, 0, 1, 2, 3);
}
[[gnu::always_inline]] inline __attribute__((target("avx512f"))) __m128d low2(__m512d x) {
  return __builtin_shufflevector(x, x, 0, 1);
}

/// Lanes [0, M) of v to p[0 .. M), 1 <= M <= 8, without a masked store: `tail` moves lanes
/// [M - 4, M) (M >= 4) or [M - 2, M) (M = 2, 3) down to lane 0, and two unmasked stores overlap
/// where M is not 4 or 2. On the Zen 5 guest a masked store (512 or 256 bits, split across lines or
/// not) cost so much that 6 x 6 products ran at 14.7 ns in the first-level cache with one per
/// column and at 9.6 ns with these (docs/performance.md, "Register kernels' stores without masks").
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx512f"))) void store_column(double* p, __m512d v, __m512i tail) {
  if constexpr (M == 8) {
    _mm512_storeu_pd(p, v);
  } else if constexpr (M >= 4) {
    _mm256_storeu_pd(p, low4(v));
    _mm256_storeu_pd(p + (M - 4), low4(_mm512_maskz_permutexvar_pd(__mmask8{0xFF}, tail, v)));
  } else if constexpr (M >= 2) {
    _mm_storeu_pd(p, low2(v));
    _mm_storeu_pd(p + (M - 2), low2(_mm512_maskz_permutexvar_pd(__mmask8{0xFF}, tail, v)));
  } else {
    _mm_store_sd(p, low2(v));
  }
}

/// M x N blocks of C, K columns of A, all compile-time: each column of a block is one register
/// whose first M lanes are used (loads under a mask, stores by store_column). Entries sharing
/// their A offset reuse the registers loaded for the first of them. Stops at the first entry of
/// another shape. (With m at run time, as until stop 76, the columns' offsets, the mask and
/// store_column's branches were worked out in every product: the se class, 6 x 6 x 6,
/// took 147-192 us a multiply on one rank against 126-134 us with m compile-time.)
template <int M, int N, int K>
__attribute__((target("avx512f"))) std::int64_t run_avx512(const StackEntry* s, std::int64_t count, const double* a,
                                                           const double* b, double* c) {
  constexpr int m = M;
  const auto rows = static_cast<__mmask8>((1u << m) - 1u);
  // store_column's lane indices: lane t takes lane t + m - 4 (m >= 4) or t + m - 2.
  constexpr int shift = m >= 4 ? m - 4 : m >= 2 ? m - 2 : 0;
  const __m512i tail = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(shift));
  const auto same_shape = [](const StackEntry& e) { return e.m == M && e.n == N && e.k == K; };
  std::int64_t i = 0;
  while (i < count && same_shape(s[i])) {
    const std::int64_t ao = s[i].a;
    __m512d av[K];
    for (int l = 0; l < K; ++l) av[l] = _mm512_maskz_loadu_pd(rows, a + ao + std::int64_t{l} * m);
    do {
      const StackEntry& e = s[i];
      prefetch_ahead<K * N * 8, M * N * 8>(s, i, count, b, c, K * N * 8, M * N * 8);
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
      for (int j = 0; j < N; ++j) store_column<M>(cc + j * m, acc[j], tail);
      ++i;
    } while (i < count && s[i].a == ao && same_shape(s[i]));
  }
  return i;
}

// ---- AVX2 (with FMA): no masked registers, so M is compile-time too --------------------------

/// Rows [0, R) of a column part (R = 1..4) into a register, the lanes beyond R zero.
template <int R>
__attribute__((target("avx2,fma"))) inline __m256d load_rows(const double* p) {
  if constexpr (R == 4) return _mm256_loadu_pd(p);
  if constexpr (R == 3) return _mm256_insertf128_pd(_mm256_zextpd128_pd256(_mm_loadu_pd(p)), _mm_load_sd(p + 2), 1);
  if constexpr (R == 2) return _mm256_zextpd128_pd256(_mm_loadu_pd(p));
  if constexpr (R == 1) return _mm256_zextpd128_pd256(_mm_load_sd(p));
}

/// Lanes [0, R) of v to rows [0, R) at p.
template <int R>
__attribute__((target("avx2,fma"))) inline void store_rows(double* p, __m256d v) {
  if constexpr (R == 4) {
    _mm256_storeu_pd(p, v);
  } else {
    const __m128d low = _mm256_castpd256_pd128(v);
    if constexpr (R >= 2) _mm_storeu_pd(p, low);
    if constexpr (R == 3) _mm_store_sd(p + 2, _mm256_extractf128_pd(v, 1));
    if constexpr (R == 1) _mm_store_sd(p, low);
  }
}

/// M x N blocks (M rows in one or two 4-lane registers a column), K columns of A, all
/// compile-time. Without the AVX-512 kernels' 32 registers A is read from the first-level cache
/// for each product (it stays there for the run of products sharing it). Stops at the first entry
/// of another shape.
template <int M, int N, int K>
__attribute__((target("avx2,fma"))) std::int64_t run_avx2(const StackEntry* s, std::int64_t count, const double* a,
                                                          const double* b, double* c) {
  constexpr int kLow = M < 4 ? M : 4, kHigh = M - kLow;  // rows in the first and second register
  constexpr int k = K;
  const auto same_shape = [](const StackEntry& e) { return e.m == M && e.n == N && e.k == K; };
  std::int64_t i = 0;
  for (; i < count && same_shape(s[i]); ++i) {
    const StackEntry& e = s[i];
    prefetch_ahead<K * N * 8, M * N * 8>(s, i, count, b, c, K * N * 8, M * N * 8);
    const double* aa = a + e.a;
    const double* bb = b + e.b;
    double* cc = c + e.c;
    __m256d low[N];
    [[maybe_unused]] __m256d high[N];  // M > 4 only
    for (int j = 0; j < N; ++j) {
      low[j] = e.first != 0 ? _mm256_setzero_pd() : load_rows<kLow>(cc + j * M);
      if constexpr (kHigh > 0) high[j] = e.first != 0 ? _mm256_setzero_pd() : load_rows<kHigh>(cc + j * M + 4);
    }
    for (int l = 0; l < k; ++l) {
      const __m256d a_low = load_rows<kLow>(aa + l * M);
      if constexpr (kHigh > 0) {
        const __m256d a_high = load_rows<kHigh>(aa + l * M + 4);
        for (int j = 0; j < N; ++j) {
          const __m256d bv = _mm256_broadcast_sd(bb + l + j * k);
          low[j] = _mm256_fmadd_pd(a_low, bv, low[j]);
          high[j] = _mm256_fmadd_pd(a_high, bv, high[j]);
        }
      } else {
        for (int j = 0; j < N; ++j) low[j] = _mm256_fmadd_pd(a_low, _mm256_broadcast_sd(bb + l + j * k), low[j]);
      }
    }
    for (int j = 0; j < N; ++j) {
      store_rows<kLow>(cc + j * M, low[j]);
      if constexpr (kHigh > 0) store_rows<kHigh>(cc + j * M + 4, high[j]);
    }
  }
  return i;
}

// ---- the tables, [m - 1][n - 1][k - 1] in each set ------------------------------------------

using Table = std::array<std::array<SmallRunFn, kSmallMax>, kSmallMax>;

template <int M, int N, std::size_t... Ks>
constexpr std::array<SmallRunFn, kSmallMax> avx512_row(std::index_sequence<Ks...>) {
  return {&run_avx512<M, N, static_cast<int>(Ks) + 1>...};
}
template <int M, std::size_t... Ns>
constexpr Table avx512_table(std::index_sequence<Ns...>) {
  return {avx512_row<M, static_cast<int>(Ns) + 1>(std::make_index_sequence<kSmallMax>{})...};
}
template <std::size_t... Ms>
constexpr std::array<Table, kSmallMax> avx512_tables(std::index_sequence<Ms...>) {
  return {avx512_table<static_cast<int>(Ms) + 1>(std::make_index_sequence<kSmallMax>{})...};
}
template <int M, int N, std::size_t... Ks>
constexpr std::array<SmallRunFn, kSmallMax> avx2_row(std::index_sequence<Ks...>) {
  return {&run_avx2<M, N, static_cast<int>(Ks) + 1>...};
}
template <int M, std::size_t... Ns>
constexpr Table avx2_table(std::index_sequence<Ns...>) {
  return {avx2_row<M, static_cast<int>(Ns) + 1>(std::make_index_sequence<kSmallMax>{})...};
}
template <std::size_t... Ms>
constexpr std::array<Table, kSmallMax> avx2_tables(std::index_sequence<Ms...>) {
  return {avx2_table<static_cast<int>(Ms) + 1>(std::make_index_sequence<kSmallMax>{})...};
}

constexpr std::array<Table, kSmallMax> kAvx512 = avx512_tables(std::make_index_sequence<kSmallMax>{});
constexpr std::array<Table, kSmallMax> kAvx2 = avx2_tables(std::make_index_sequence<kSmallMax>{});
#else
#define PLEXUS_SMALL_BLOCKS 0
#endif

}  // namespace

bool small_kernels_built() { return PLEXUS_SMALL_BLOCKS != 0; }

bool cpu_has(SmallIsa isa) {
#if PLEXUS_SMALL_BLOCKS
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  return isa == SmallIsa::Avx512 ? avx512 : avx2;
#else
  (void)isa;
  return false;
#endif
}

#if PLEXUS_SMALL_BLOCKS
namespace {
[[gnu::target("avx")]] void zero_upper() { _mm256_zeroupper(); }
}  // namespace
#endif

void clear_upper_vector_state() {
#if PLEXUS_SMALL_BLOCKS
  static const bool avx = __builtin_cpu_supports("avx") != 0;
  if (avx) zero_upper();
#endif
}

std::optional<SmallIsa> widest_small_isa() {
  if (cpu_has(SmallIsa::Avx512)) return SmallIsa::Avx512;
  if (cpu_has(SmallIsa::Avx2)) return SmallIsa::Avx2;
  return std::nullopt;
}

const char* isa_name(SmallIsa isa) { return isa == SmallIsa::Avx512 ? "AVX-512F" : "AVX2 and FMA"; }

SmallRunFn small_run_kernel(SmallIsa isa, int m, int n, int k) {
  if (m < 1 || n < 1 || k < 1 || m > kSmallMax || n > kSmallMax || k > kSmallMax) return nullptr;
  if (!cpu_has(isa)) return nullptr;
#if PLEXUS_SMALL_BLOCKS
  const auto at = [](int x) { return static_cast<std::size_t>(x - 1); };
  if (isa == SmallIsa::Avx512) return kAvx512[at(m)][at(n)][at(k)];
  return kAvx2[at(m)][at(n)][at(k)];
#else
  return nullptr;
#endif
}

}  // namespace plexus_kernels_cpu
