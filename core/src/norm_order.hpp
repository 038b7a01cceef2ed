#pragma once
// A block row's blocks ordered by norm, largest first and NaN last: the on-the-fly filter of
// LocalProduct takes the products of an A block that pass |a| |b| >= eps as a prefix of its B row
// in this order (local_multiply.cpp). The filter orders every B row in every filtered multiply, so
// the order is a bucket sort, not a comparison sort: blocks go into buckets of a quarter of a power
// of two by their norms' exponent and two leading mantissa bits (no comparisons, no mispredicted
// branches), and each bucket, a few blocks at most in a row whose norms spread over orders of
// magnitude, is then sorted by insertion. In a filtered sign solve of 216 model molecules (blocks
// of 6, FilterEps 1e-6) std::sort over the rows' indices took 4-6 % of the solve.
#include <cstdint>
#include <vector>

namespace plexus {

class NormOrder {
 public:
  // Blocks lo .. hi - 1 of `norms` by norm, largest first, NaN last: order[lo .. hi - 1] gets the
  // blocks' indices and sorted[lo .. hi - 1] their norms in that order. Blocks of equal norm may
  // come in any order. Reuses its scratch from row to row (one NormOrder per thread).
  void row(const double* norms, std::int64_t lo, std::int64_t hi, std::int64_t* order, double* sorted);

 private:
  std::vector<std::uint32_t> slot_;   // each block's bucket
  std::vector<std::uint32_t> count_;  // blocks per bucket, then where each bucket ends
};

// How many of a row's norms in NormOrder's order, sorted[lo .. hi - 1], pass with an A block of norm
// `an`: the end of the prefix where an * sorted[i] >= eps (as std::partition_point finds it; NaN
// never passes). A binary search whose steps choose by a conditional move, not a branch (where
// std's mispredicts about every other step): each step waits for its load instead, so the caller
// prefetches the row (local_multiply.cpp).
inline std::int64_t passing_end(const double* sorted, std::int64_t lo, std::int64_t hi, double an, double eps) {
  if (hi <= lo) return lo;
  const double* base = sorted + lo;
  std::int64_t n = hi - lo;
  // The end lies in [base, base + n]: everything before base passes.
  while (n > 1) {
    const std::int64_t half = n / 2;
    base += an * base[half - 1] >= eps ? half : 0;
    n -= half;
  }
  return (base - sorted) + (an * base[0] >= eps ? 1 : 0);
}

}  // namespace plexus
