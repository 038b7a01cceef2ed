// NormOrder (core/src/norm_order.hpp): a row's blocks by norm, largest first, NaN last, checked
// against std::stable_sort over the same norms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "norm_order.hpp"

using plexus::NormOrder;

namespace {

// Orders blocks lo .. hi - 1 of `norms` with NormOrder inside arrays larger than the row (other
// entries must stay untouched) and checks: order is a permutation of the row, sorted[i] is the norm
// of block order[i], and the norms equal those of a stable comparison sort, NaN last.
void expect_ordered(const std::vector<double>& norms, std::int64_t lo, std::int64_t hi, NormOrder& by_norm) {
  constexpr std::int64_t kUntouched = -7;
  std::vector<std::int64_t> order(norms.size(), kUntouched);
  std::vector<double> sorted(norms.size(), -1.0);
  by_norm.row(norms.data(), lo, hi, order.data(), sorted.data());

  std::vector<std::int64_t> expect(static_cast<std::size_t>(hi - lo));
  std::iota(expect.begin(), expect.end(), lo);
  std::stable_sort(expect.begin(), expect.end(), [&](std::int64_t p, std::int64_t q) {
    const double x = norms[static_cast<std::size_t>(p)], y = norms[static_cast<std::size_t>(q)];
    if (std::isnan(y)) return !std::isnan(x);
    return !std::isnan(x) && x > y;
  });
  for (std::size_t i = 0; i < norms.size(); ++i) {
    const auto at = static_cast<std::int64_t>(i);
    if (at < lo || at >= hi) {
      ASSERT_EQ(order[i], kUntouched) << "outside the row at " << i;
      ASSERT_EQ(sorted[i], -1.0) << "outside the row at " << i;
    }
  }
  std::vector<std::int64_t> got(order.begin() + lo, order.begin() + hi);
  std::sort(got.begin(), got.end());
  std::vector<std::int64_t> all(static_cast<std::size_t>(hi - lo));
  std::iota(all.begin(), all.end(), lo);
  ASSERT_EQ(got, all) << "not a permutation of the row";
  for (std::int64_t i = lo; i < hi; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const double want = norms[static_cast<std::size_t>(expect[static_cast<std::size_t>(i - lo)])];
    const double norm = norms[static_cast<std::size_t>(order[u])];
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(sorted[u]) && std::isnan(norm)) << "at " << i;
    } else {
      ASSERT_EQ(sorted[u], want) << "at " << i;
      ASSERT_EQ(norm, want) << "at " << i;
    }
  }
}

}  // namespace

TEST(NormOrder, ShortAndEmptyRows) {
  NormOrder by_norm;
  const double nan = std::nan("");
  const std::vector<double> norms{3.0, nan, 0.5, 0.0, 7.0, 0.5, nan, 1e-300, 2.0};
  expect_ordered(norms, 0, static_cast<std::int64_t>(norms.size()), by_norm);
  expect_ordered(norms, 2, 7, by_norm);
  expect_ordered(norms, 4, 4, by_norm);  // an empty row
  expect_ordered(norms, 6, 7, by_norm);  // a single NaN
}

// Long rows take the buckets: norms spread over orders of magnitude (the filtered solves' case),
// beyond the buckets' reach (the smallest share the last bucket), bunched in one bucket, equal,
// with zeros, subnormals, -0, infinities and NaN.
TEST(NormOrder, LongRowsOfEveryKind) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-14.0, 2.0), wide(-300.0, 300.0), mantissa(1.0, 1.2);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double subnormal = std::numeric_limits<double>::denorm_min();
  for (const int n : {25, 108, 1000}) {
    SCOPED_TRACE(std::to_string(n) + " blocks");
    std::vector<std::vector<double>> rows;
    std::vector<double> spread(static_cast<std::size_t>(n)), beyond(spread), bunched(spread),
        equal(static_cast<std::size_t>(n), 0.25);
    for (auto& x : spread) x = std::pow(10.0, exponent(rng));
    for (auto& x : beyond) x = std::pow(10.0, wide(rng));
    for (auto& x : bunched) x = mantissa(rng);
    std::vector<double> special = spread;
    for (std::size_t i = 0; i < special.size(); i += 5)
      special[i] = std::vector<double>{0.0, -0.0, inf, nan, subnormal}[(i / 5) % 5];
    special[1] = special[2];  // a duplicate among the rest
    for (const auto* row : {&spread, &beyond, &bunched, &equal, &special}) {
      NormOrder by_norm;  // a fresh one, and one reused over the rows of another size below
      std::vector<double> padded(3, 9.0);
      padded.insert(padded.end(), row->begin(), row->end());
      padded.insert(padded.end(), 2, 9.0);
      expect_ordered(padded, 3, 3 + n, by_norm);
    }
  }
  NormOrder reused;
  for (const int n : {1000, 30, 200, 3}) {
    std::vector<double> row(static_cast<std::size_t>(n));
    for (auto& x : row) x = std::pow(10.0, exponent(rng));
    expect_ordered(row, 0, n, reused);
  }
}

// passing_end against std::partition_point over rows in NormOrder's order: empty rows, rows where
// all, none or part pass, products exactly at eps, NaN and infinite norms, zero A norms.
TEST(NormOrder, PassingEndIsThePartitionPoint) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> exponent(-12.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  NormOrder by_norm;
  for (const int n : {0, 1, 2, 3, 7, 8, 9, 64, 87, 200}) {
    std::vector<double> norms(static_cast<std::size_t>(n));
    for (auto& x : norms) x = std::pow(10.0, exponent(rng));
    if (n > 4) {
      norms[1] = nan;
      norms[3] = inf;
      norms[4] = 1e-6;  // times an = 1 gives eps exactly: passes (>=)
    }
    for (int i = 5; i < n && i < n / 2 + 5; ++i) norms[static_cast<std::size_t>(i)] = 1e-6;  // and many more
    std::vector<std::int64_t> order(norms.size() + 2);
    std::vector<double> sorted(norms.size() + 2, -1.0);
    by_norm.row(norms.data(), 0, n, order.data() + 1, sorted.data() + 1);  // a row at lo = 1
    for (const double an : {0.0, 1e-9, 1e-3, 1.0, 1e3, 1e12, inf}) {
      const double eps = 1e-6;
      const auto expect =
          std::partition_point(sorted.begin() + 1, sorted.begin() + 1 + n, [&](double bn) { return an * bn >= eps; }) -
          sorted.begin();
      EXPECT_EQ(plexus::passing_end(sorted.data(), 1, 1 + n, an, eps), expect) << n << " blocks, an " << an;
    }
  }
}
