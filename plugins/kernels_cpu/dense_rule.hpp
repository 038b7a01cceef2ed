// The cpu kernel's rule for DenseMinSize = -1: from what size (the harmonic mean of a thread's rows,
// the tick's columns and its inner size: HostKernel::dense_min_size) a dense tick goes to dgemm
// whole, by the tick's blocks and the instruction set that runs its block products (the register
// kernels' set: the one Backend names, else the widest the CPU has; libxsmm generates its kernels
// for the same). Measured in docs/performance.md ("Dense ticks", "Dense ticks by the instruction
// set"):
// - AVX-512F (and CPUs without either set): 36 times the blocks' mean size (the harmonic mean of
//   their mean rows, columns and inner size) where their mean rows are a whole multiple of 8, 30
//   times otherwise;
// - AVX2 without AVX-512F: 36 times the mean size where the mean rows are a whole multiple of 4
//   and above 8 (libxsmm's kernels for such blocks run near dgemm's rate), a harmonic mean of 144
//   otherwise, whatever the blocks (blocks of 6, 8, 13 and 23 all crossed over between about 110
//   and 165 on an AMD Zen 3, where their products ran at less than half of dgemm's rate).
// Where dgemm is slow (dgemm_share.hpp: below 0.6 of the block kernels' rate on blocks of 32 in
// cache, as on an AMD Zen 5 with OpenBLAS's AVX2 kernels; 0.9 to 1.1 where the rules above were
// measured), blocks whose products the kernel runs itself (register kernels, libxsmm) never go
// dense from a mean size of 20 (blocks of 23 and 32 ran 1.5 and 2 times as fast as dense ticks
// from 512^2 to 3072^2), whose mean rows are a whole multiple of 8 from 320 times their mean size
// (blocks of 8 crossed over between 2048^2 and 3072^2, blocks of 16 at about 4096^2), and other
// blocks follow their set's rule (blocks of 6 and of 10 lost to dense ticks at every size measured).
// A header of its own so that the unit tests check each set's rule on any CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "plexus/kernel.hpp"
#include "small_blocks.hpp"

namespace plexus_kernels_cpu {

inline constexpr double kDenseBlocksAligned = 36;  // blocks whose mean rows are a whole multiple of the vector width
inline constexpr double kDenseBlocks = 30;         // other blocks under AVX-512F
inline constexpr double kDenseSizeAvx2 = 144;      // other blocks under AVX2

/// The size from which a dense tick of these blocks goes dense under `isa`'s rule (none: AVX-512F's);
/// 0 (never) for blocks without a positive size.
inline std::int64_t dense_size_by_blocks(const plexus::DenseBlocks& b, std::optional<SmallIsa> isa) {
  if (!(b.rows > 0 && b.cols > 0 && b.inner > 0)) return 0;
  const double mean = 3.0 / (1.0 / b.rows + 1.0 / b.cols + 1.0 / b.inner);
  if (isa == SmallIsa::Avx2) {
    const bool aligned = b.rows > kSmallMax && std::fmod(b.rows, 4.0) == 0.0;
    return std::max<std::int64_t>(1, std::llround(aligned ? kDenseBlocksAligned * mean : kDenseSizeAvx2));
  }
  const bool aligned = b.rows >= 8 && std::fmod(b.rows, 8.0) == 0.0;
  return std::max<std::int64_t>(1, std::llround((aligned ? kDenseBlocksAligned : kDenseBlocks) * mean));
}

inline constexpr double kSlowDgemmShare = 0.6;     // dgemm's rate over the block kernels' below which dgemm is slow
inline constexpr double kSlowDgemmNeverMean = 20;  // where it is, blocks of this mean size on never go dense
inline constexpr double kSlowDgemmAligned = 320;   // and blocks with mean rows a multiple of 8 below it from 320 x

/// The size from which a dense tick of these blocks goes dense, where dgemm runs at `dgemm_share`
/// of the block kernels' rate (dgemm_share.hpp) and `own_products` says whether the kernel
/// computes products of these blocks itself (else they go to dgemm one by one, and `isa`'s rule
/// holds whatever dgemm's rate).
inline std::int64_t dense_size_for(const plexus::DenseBlocks& b, std::optional<SmallIsa> isa, double dgemm_share,
                                   bool own_products) {
  if (!(b.rows > 0 && b.cols > 0 && b.inner > 0)) return 0;
  if (!own_products || !(dgemm_share < kSlowDgemmShare)) return dense_size_by_blocks(b, isa);
  const double mean = 3.0 / (1.0 / b.rows + 1.0 / b.cols + 1.0 / b.inner);
  if (mean >= kSlowDgemmNeverMean - 1e-9) return 0;  // blocks of 20 give 19.999...: 20 all the same
  if (b.rows >= 8 && std::fmod(b.rows, 8.0) == 0.0)
    return std::max<std::int64_t>(1, std::llround(kSlowDgemmAligned * mean));
  return dense_size_by_blocks(b, isa);
}

}  // namespace plexus_kernels_cpu
