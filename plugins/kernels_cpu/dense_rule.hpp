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

}  // namespace plexus_kernels_cpu
