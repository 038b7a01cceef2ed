// Products of small blocks (m <= 8, n <= 8, k <= 8) in vector registers, without a library call
// per product.
//
// For blocks this small a library call per product (libxsmm's JIT code, dgemm) spends about as
// long getting in and out as multiplying: plexus-bench's S-E-like 6x6 blocks ran at 0.65-0.68 of
// the rate libxsmm reaches on a few cache-resident blocks. Two instruction sets, chosen at run
// time:
// - AVX-512F: one register per column of a block (m <= 8 lanes under a mask), one kernel for
//   each (m, n, k) (512 of them: with m at run time se's 6 x 6 x 6 ran a sixth slower). Core's
//   stacks come ordered by A block within a C row (for each A(i,k), every B(k,j) of B's row k), so
//   consecutive entries share their A block: it is loaded once for the run, one register per
//   column, and each entry computes C's n columns as n chains of k fused multiply-adds with B's
//   entries broadcast. C's columns are loaded under the mask but stored without one (two
//   overlapping stores of 4 or 2 lanes where m < 8): on a Zen 5 a 6 x 6 product in the
//   first-level cache took 14.7 ns with a masked store per column, 9.6 ns without.
// - AVX2 with FMA: one or two 4-lane registers per column (no masks), A read from the first-level
//   cache for each product (16 registers do not hold it beside C), one kernel per (m, n, k) too.
#pragma once

#include <cstdint>
#include <optional>

#include "plexus/kernel.hpp"

namespace plexus_kernels_cpu {

/// Processes stack entries in order, C(e.c) = (e.first ? 0 : C(e.c)) + A(e.a) * B(e.b) with
/// column-major blocks, from stack[0] (whose shape small_run_kernel was asked for) up to the first
/// entry of another shape or `count`; returns how many it processed (at least 1; 0 for count 0).
using SmallRunFn = std::int64_t (*)(const plexus::StackEntry* stack, std::int64_t count, const double* a,
                                    const double* b, double* c);

/// Largest m, n and k the register kernels take.
inline constexpr int kSmallMax = 8;

/// The instruction sets the register kernels come in.
enum class SmallIsa { Avx512, Avx2 };

/// Whether this build has the register kernels (x86-64 with GCC or Clang).
bool small_kernels_built();
/// Whether this build has them and this CPU runs `isa`'s (AVX-512F; AVX2 and FMA).
bool cpu_has(SmallIsa isa);
/// The widest set this CPU runs, or none.
std::optional<SmallIsa> widest_small_isa();
/// vzeroupper, where the CPU has AVX (else nothing): after code that may return with the upper
/// halves of the vector registers in use, as libxsmm 1.17's generated kernels do. Until then every
/// SSE instruction of the code that follows (core's, built for baseline x86-64) is slowed:
/// docs/performance.md, "After libxsmm's kernels".
void clear_upper_vector_state();
/// "AVX-512F" or "AVX2 and FMA", for messages.
const char* isa_name(SmallIsa isa);

/// The register kernel in `isa` for m x n x k products, or nullptr when the shape is out of range
/// (any of m, n, k < 1 or > kSmallMax) or this CPU lacks `isa`.
SmallRunFn small_run_kernel(SmallIsa isa, int m, int n, int k);

}  // namespace plexus_kernels_cpu
