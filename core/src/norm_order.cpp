#include "norm_order.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

namespace plexus {

namespace {

// Buckets per power of two: 2^kSubBits (the mantissa's leading bits). Finer buckets hold fewer
// blocks to sort by insertion but make a longer count to clear per row.
constexpr int kSubBits = 2;
// At most this many buckets below the row's largest norm, 64 powers of two (19 orders of
// magnitude); anything smaller shares the last one (which std::sort orders when it is large).
constexpr std::uint32_t kMaxBuckets = 256;
// Below this many blocks a row is sorted by insertion at once; above it a bucket is.
constexpr std::int64_t kInsertion = 24;

// A non-negative norm's bucket, larger norms first: +inf first, then by exponent and the leading
// mantissa bits, zero last. The sign bit is left out (-0.0 counts as 0).
std::uint32_t bucket_of(double x) {
  constexpr std::uint64_t kMask = (std::uint64_t{2048} << kSubBits) - 1;
  const auto top = static_cast<std::uint32_t>((std::bit_cast<std::uint64_t>(x) >> (52 - kSubBits)) & kMask);
  return static_cast<std::uint32_t>(kMask) - top;
}

// sorted[lo .. hi - 1] (no NaN) and order alongside, largest first, by insertion.
void insertion_sort(double* sorted, std::int64_t* order, std::int64_t lo, std::int64_t hi) {
  for (std::int64_t i = lo + 1; i < hi; ++i) {
    const double v = sorted[i];
    const std::int64_t o = order[i];
    std::int64_t j = i;
    for (; j > lo && sorted[j - 1] < v; --j) {
      sorted[j] = sorted[j - 1];
      order[j] = order[j - 1];
    }
    sorted[j] = v;
    order[j] = o;
  }
}

// The same for a long range (a bucket that gathered many blocks).
void comparison_sort(double* sorted, std::int64_t* order, std::int64_t lo, std::int64_t hi) {
  std::vector<std::pair<double, std::int64_t>> pairs(static_cast<std::size_t>(hi - lo));
  for (std::int64_t i = lo; i < hi; ++i) pairs[static_cast<std::size_t>(i - lo)] = {sorted[i], order[i]};
  std::sort(pairs.begin(), pairs.end(), [](const auto& p, const auto& q) { return p.first > q.first; });
  for (std::int64_t i = lo; i < hi; ++i) std::tie(sorted[i], order[i]) = pairs[static_cast<std::size_t>(i - lo)];
}

void sort_range(double* sorted, std::int64_t* order, std::int64_t lo, std::int64_t hi) {
  if (hi - lo <= kInsertion)
    insertion_sort(sorted, order, lo, hi);
  else
    comparison_sort(sorted, order, lo, hi);
}

}  // namespace

void NormOrder::row(const double* norms, std::int64_t lo, std::int64_t hi, std::int64_t* order, double* sorted) {
  const std::int64_t n = hi - lo;
  if (n <= 0) return;
  if (n <= kInsertion) {  // NaN moved to the end first, the rest by insertion
    std::int64_t end = hi;
    for (std::int64_t i = lo, at = lo; i < hi; ++i) {
      if (std::isnan(norms[i])) {
        sorted[--end] = norms[i];
        order[end] = i;
      } else {
        sorted[at] = norms[i];
        order[at++] = i;
      }
    }
    insertion_sort(sorted, order, lo, end);
    return;
  }
  constexpr std::uint32_t kNaN = ~std::uint32_t{0};
  slot_.resize(static_cast<std::size_t>(n));
  std::uint32_t first = kNaN, last = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = norms[lo + i];
    const std::uint32_t b = std::isnan(x) ? kNaN : bucket_of(x);
    slot_[static_cast<std::size_t>(i)] = b;
    if (b != kNaN) {
      first = std::min(first, b);
      last = std::max(last, b);
    }
  }
  // Buckets 0 .. span - 1 for the numbers (the last also takes all below), span for NaN.
  const std::uint32_t span = first == kNaN ? 0 : std::min(last - first + 1, kMaxBuckets);
  count_.assign(span + 2, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t& s = slot_[static_cast<std::size_t>(i)];
    s = s == kNaN ? span : std::min(s - first, span - 1);
    ++count_[s + 1];
  }
  for (std::uint32_t s = 1; s <= span + 1; ++s) count_[s] += count_[s - 1];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t at = lo + count_[slot_[static_cast<std::size_t>(i)]]++;
    order[at] = lo + i;
    sorted[at] = norms[lo + i];
  }
  // count_[s] is now where bucket s ends.
  std::int64_t begin = lo;
  for (std::uint32_t s = 0; s < span; ++s) {
    const std::int64_t end = lo + count_[s];
    if (end - begin > 1) sort_range(sorted, order, begin, end);
    begin = end;
  }
}

}  // namespace plexus
