// Products of small blocks (m <= 8, n <= 8, k <= 8) with A held in vector registers.
//
// For blocks this small a library call per product (libxsmm's JIT code, dgemm) spends about as
// long getting in and out as multiplying: S-E-like 6x6 blocks run at 0.6-0.7 of libxsmm's rate
// on a few cache-resident blocks. Core's stacks come ordered by A block within a C row (for each
// A(i,k), every B(k,j) of B's row k), so consecutive entries share their A block. The kernels
// here load that block once, one register per column of A (m <= 8 doubles, masked), and for each
// entry compute the C block's n columns as n independent chains of k fused multiply-adds with
// B's entries broadcast. Needs AVX-512F at run time; small_run_kernel says nullptr without it.
#pragma once

#include <cstdint>

#include "plexus/kernel.hpp"

namespace plexus_kernels_cpu {

/// Processes stack entries in order, C(e.c) = (e.first ? 0 : C(e.c)) + A(e.a) * B(e.b) with
/// column-major blocks, from stack[0] (whose shape small_run_kernel was asked for) up to the first
/// entry of another shape or `count`; returns how many it processed (at least 1 for count >= 1).
using SmallRunFn = std::int64_t (*)(const plexus::StackEntry* stack, std::int64_t count, const double* a,
                                    const double* b, double* c);

/// Largest m, n and k the register kernels take.
inline constexpr int kSmallMax = 8;

/// The register kernel for m x n x k products, or nullptr when the shape is out of range
/// (any of m, n, k < 1 or > kSmallMax) or this CPU lacks AVX-512F.
SmallRunFn small_run_kernel(int m, int n, int k);

/// Whether this CPU runs the register kernels (AVX-512F).
bool small_kernels_available();

}  // namespace plexus_kernels_cpu
