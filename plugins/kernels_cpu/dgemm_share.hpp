// How fast the BLAS's dgemm runs against a host kernel's own block products, on this machine: the
// figure that decides whether the cpu kernel's dense ticks can pay at all (dense_rule.hpp).
//
// The rule's sizes were measured where dgemm runs at 0.9 to 1.1 of libxsmm's rate on blocks of 32
// in cache (an Intel Xeon with AVX-512, an AMD Zen 3 with AVX2). Where the BLAS runs narrower
// vectors than the CPU has (OpenBLAS's AVX2 "Haswell" kernels on an AMD Zen 5, which has AVX-512,
// with OPENBLAS_CORETYPE=Haswell as the environment set it), dgemm ran at 0.4 to 0.5 of that rate,
// and dense ticks of blocks of 32 took twice the block products' time (docs/performance.md,
// "Dense ticks where dgemm is slow"). No instruction set or core name tells that apart from a CPU
// whose AVX-512 runs at AVX2's rate (an AMD Zen 4), nor says what another BLAS runs, so it is
// measured, once, on the calling thread: a few milliseconds.
// A header of its own so that the unit tests measure a kernel from the registry the same way.
#pragma once

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "plexus/kernel.hpp"

namespace plexus_kernels_cpu {

/// dgemm's rate over `kernel`'s on block products, each the best of a few timed runs after one
/// untimed: dgemm of 256^3, and the kernel's process() on a product of 4 x 4 blocks by 4 x 4
/// blocks of 32 (64 products, 384 KB in all: in the second-level cache of the CPUs measured).
/// Positive and finite.
inline double measure_dgemm_share(plexus::HostKernel& kernel) {
  constexpr int kN = 256;
  constexpr int kBlock = 32, kBlocks = 4;
  constexpr std::int64_t kValues = std::int64_t{kBlock} * kBlock;
  std::vector<double> a(std::size_t{kN} * kN), b(a.size()), c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 1.0 / static_cast<double>(1 + i % 7);
    b[i] = 1.0 / static_cast<double>(1 + i % 5);
  }
  const auto best_of = [](int runs, auto&& run) {
    run();
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < runs; ++r) {
      const double t0 = omp_get_wtime();
      run();
      best = std::min(best, omp_get_wtime() - t0);
    }
    return std::max(best, 1e-9);
  };
  const double dgemm_seconds = best_of(5, [&] {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0, a.data(), kN, b.data(), kN, 0.0, c.data(),
                kN);
  });
  // C(i, j) = sum over p of A(i, p) B(p, j), every block 32 x 32, the p = 0 products marked first
  // (a kernel whose first products add finds C's blocks zeroed here: the values are the same).
  std::vector<plexus::StackEntry> stack;
  for (int i = 0; i < kBlocks; ++i)
    for (int j = 0; j < kBlocks; ++j)
      for (int p = 0; p < kBlocks; ++p)
        stack.push_back({.m = kBlock,
                         .n = kBlock,
                         .k = kBlock,
                         .first = p == 0 ? 1 : 0,
                         .a = (i * kBlocks + p) * kValues,
                         .b = (p * kBlocks + j) * kValues,
                         .c = (i * kBlocks + j) * kValues});
  const bool writes = kernel.first_product_writes();
  const double blocks_seconds = best_of(20, [&] {
    if (!writes) std::fill_n(c.begin(), kBlocks * kBlocks * kValues, 0.0);
    kernel.process(stack.data(), static_cast<std::int64_t>(stack.size()), a.data(), b.data(), c.data());
  });
  const double dgemm_rate = 2.0 * kN * kN * kN / dgemm_seconds;
  const double blocks_rate = 2.0 * static_cast<double>(stack.size()) * kBlock * kBlock * kBlock / blocks_seconds;
  return dgemm_rate / blocks_rate;
}

}  // namespace plexus_kernels_cpu
