#pragma once
// plexus-bench's yardsticks: libxsmm's rate on cache-resident blocks and OpenBLAS DGEMM on one
// core, measured between a class's multiplies (plexus_bench.cpp).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "plexus/kernel.hpp"

#if PLEXUS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

extern "C" {
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename();  // the kernels OpenBLAS chose for this CPU ("Haswell", "SkylakeX", ...)
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
}

namespace plexus::bench::yardsticks {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The kernels OpenBLAS runs DGEMM with here: with OPENBLAS_CORETYPE set, or on a CPU it does not
/// know, OpenBLAS may take narrower vectors than the CPU has (its AVX2 "Haswell" kernels on an AMD
/// Zen 5, docs/performance.md "Dense ticks where dgemm is slow"), which the DGEMM yardstick then
/// measures.
inline std::string dgemm_kernels() {
  const char* core = openblas_get_corename();
  return core != nullptr ? core : "unknown";
}

/// The in-cache yardsticks' products: bs x bs x bs, C += A*B, over 8 blocks of each operand, product
/// i taking A's block i % 8, B's (i + 3) % 8 and C's (i + 5) % 8 (A, B and C each change from one
/// product to the next), in batches of about 2e7 flops. libxsmm's and the cpu kernel's yardsticks
/// run exactly these.
struct InCacheProducts {
  static constexpr int kBlocks = 8;
  int bs;
  std::int64_t n;  // values per block
  long batch;      // products per batch
  std::vector<double> a, b, c;
  explicit InCacheProducts(int block)
      : bs(block),
        n(std::int64_t{block} * block),
        batch(std::max(1L, static_cast<long>(2e7 / (2.0 * block * block * block)))),
        a(static_cast<std::size_t>(kBlocks * n)),
        b(a.size(), 0.25),
        c(a.size(), 0.0) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 1e-3 * static_cast<double>(i % 17);
  }
  std::int64_t a_at(long i) const { return (i % kBlocks) * n; }
  std::int64_t b_at(long i) const { return ((i + 3) % kBlocks) * n; }
  std::int64_t c_at(long i) const { return ((i + 5) % kBlocks) * n; }
  double flops(long products) const { return 2.0 * bs * bs * bs * static_cast<double>(products); }
  /// Runs `one_batch` until `min_seconds` have passed; returns {products, seconds}.
  template <class F>
  std::pair<long, double> timed(double min_seconds, F&& one_batch) {
    const auto t0 = Clock::now();
    long products = 0;
    double dt = 0;
    do {
      one_batch();
      products += batch;
      dt = seconds_since(t0);
    } while (dt < min_seconds);
    volatile double sink = c[0];
    (void)sink;
    return {products, dt};
  }
};

/// libxsmm's rate (GFLOP/s) for bs x bs x bs products on a few cache-resident blocks, C += A*B
/// (InCacheProducts), on `threads` threads (each its own blocks); NaN without libxsmm.
inline double xsmm_incache_gflops(int bs, double min_seconds, int threads) {
#if PLEXUS_HAVE_LIBXSMM
  libxsmm_init();
  const double alpha = 1.0, beta = 1.0;
  const libxsmm_dmmfunction fn =
      libxsmm_dmmdispatch(bs, bs, bs, nullptr, nullptr, nullptr, &alpha, &beta, nullptr, nullptr);
  if (!fn) return NAN;
  double total_flops = 0, elapsed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total_flops) reduction(max : elapsed)
  {
    InCacheProducts p(bs);
    const auto one_batch = [&] {
      for (long i = 0; i < p.batch; ++i) fn(&p.a[p.a_at(i)], &p.b[p.b_at(i)], &p.c[p.c_at(i)]);
    };
    one_batch();
#pragma omp barrier
    const auto [products, seconds] = p.timed(min_seconds, one_batch);
    total_flops += p.flops(products);
    elapsed = seconds;
  }
  return total_flops / elapsed / 1e9;
#else
  (void)bs;
  (void)min_seconds;
  (void)threads;
  return NAN;
#endif
}

/// The cpu kernel's own rate (GFLOP/s) on the libxsmm yardstick's products (InCacheProducts), as
/// one stack through `kernel`'s process() on the calling thread. It tells the kernel's ceiling
/// apart from what the multiply's memory and stacks cost.
inline double kernel_incache_gflops(plexus::HostKernel& kernel, int bs, double min_seconds) {
  InCacheProducts p(bs);
  std::vector<plexus::StackEntry> stack(static_cast<std::size_t>(p.batch));
  for (long i = 0; i < p.batch; ++i)
    stack[static_cast<std::size_t>(i)] = {
        .m = bs, .n = bs, .k = bs, .first = 0, .a = p.a_at(i), .b = p.b_at(i), .c = p.c_at(i)};
  const auto one_batch = [&] { kernel.process(stack.data(), p.batch, p.a.data(), p.b.data(), p.c.data()); };
  one_batch();  // warm-up: the kernels chosen, the blocks in cache
  const auto [products, seconds] = p.timed(min_seconds, one_batch);
  return p.flops(products) / seconds / 1e9;
}

/// OpenBLAS DGEMM on one core, n x n x n, on operands made once (the constructor runs one untimed
/// call as the warm-up).
class Dgemm {
 public:
  explicit Dgemm(int n) : n_(n), a_(static_cast<std::size_t>(n) * n), b_(a_.size()), c_(a_.size(), 0.0) {
    openblas_set_num_threads(1);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> val(-1, 1);
    for (double& x : a_) x = val(rng);
    for (double& x : b_) x = val(rng);
    seconds();
  }
  /// One timed call.
  double seconds() {
    const double one = 1.0;
    const char nt = 'N';
    const auto t0 = Clock::now();
    dgemm_(&nt, &nt, &n_, &n_, &n_, &one, a_.data(), &n_, b_.data(), &n_, &one, c_.data(), &n_);
    return seconds_since(t0);
  }
  double gflops(double seconds) const { return 2.0 * n_ * n_ * static_cast<double>(n_) / seconds / 1e9; }

 private:
  int n_;
  std::vector<double> a_, b_, c_;
};

/// The yardsticks of one class, measured once per round between its multiplies, so that a slow
/// spell of the machine (another process, the clock) hits both sides of a fraction alike.
struct Yardsticks {
  std::vector<double> xsmm1, xsmm2, kernel1, dgemm;  // GFLOP/s, one per round
  void measure(int block, double yard_seconds, Dgemm& d, plexus::HostKernel& kernel) {
    xsmm1.push_back(xsmm_incache_gflops(block, yard_seconds, 1));
    xsmm2.push_back(xsmm_incache_gflops(block, yard_seconds, 2));
    kernel1.push_back(kernel_incache_gflops(kernel, block, yard_seconds));
    dgemm.push_back(d.gflops(d.seconds()));
  }
  static double best(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }
};

}  // namespace plexus::bench::yardsticks
