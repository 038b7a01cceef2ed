// The timing pieces of the `plexus` program: min/median/mean of a sample, the round-robin order
// of `compare`, the Timing sublist. A run's summary over ranks: test_summary.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app.hpp"

namespace {

using plexus::app::round_order;
using plexus::app::time_stats;

TEST(TimeStats, OddCountIsTheMiddleValue) {
  const auto t = time_stats({0.5, 0.1, 0.3});
  EXPECT_DOUBLE_EQ(t.min, 0.1);
  EXPECT_DOUBLE_EQ(t.median, 0.3);
  EXPECT_DOUBLE_EQ(t.mean, 0.3);
  EXPECT_DOUBLE_EQ(t.max, 0.5);
}

TEST(TimeStats, EvenCountAveragesTheTwoMiddleValues) {
  const auto t = time_stats({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(t.min, 1.0);
  EXPECT_DOUBLE_EQ(t.median, 2.5);
  EXPECT_DOUBLE_EQ(t.mean, 2.5);
  EXPECT_DOUBLE_EQ(t.max, 4.0);
}

TEST(TimeStats, OneSlowFirstUseMovesTheMeanNotTheMedian) {
  const auto t = time_stats({0.167, 0.011, 0.011, 0.012, 0.011});
  EXPECT_DOUBLE_EQ(t.median, 0.011);
  EXPECT_NEAR(t.mean, 0.0424, 1e-12);
  EXPECT_DOUBLE_EQ(t.min, 0.011);
}

TEST(TimeStats, SingleAndEmptySamples) {
  const auto one = time_stats({0.25});
  EXPECT_DOUBLE_EQ(one.min, 0.25);
  EXPECT_DOUBLE_EQ(one.median, 0.25);
  EXPECT_DOUBLE_EQ(one.mean, 0.25);
  const auto none = time_stats({});
  EXPECT_EQ(none.min, 0.0);
  EXPECT_EQ(none.median, 0.0);
  EXPECT_EQ(none.mean, 0.0);
}

TEST(RoundOrder, FixedIsTheGivenOrderEveryRound) {
  for (int r = 0; r < 5; ++r) EXPECT_EQ(round_order(3, r, 5, false), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(RoundOrder, RotatedEndsInTheGivenOrder) {
  // 1 warm-up + 2 counted rounds of 4 combinations.
  EXPECT_EQ(round_order(4, 0, 3, true), (std::vector<std::size_t>{2, 3, 0, 1}));
  EXPECT_EQ(round_order(4, 1, 3, true), (std::vector<std::size_t>{3, 0, 1, 2}));
  EXPECT_EQ(round_order(4, 2, 3, true), (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(RoundOrder, RotatedGivesEveryCombinationEveryPosition) {
  for (std::size_t n = 1; n <= 5; ++n) {
    const int total = 7;
    // Any n consecutive rounds: each combination at each position exactly once.
    for (int first = 0; first + static_cast<int>(n) <= total; ++first) {
      std::vector<std::vector<int>> seen(n, std::vector<int>(n, 0));
      for (int r = first; r < first + static_cast<int>(n); ++r) {
        const auto order = round_order(n, r, total, true);
        ASSERT_EQ(order.size(), n);
        auto sorted = order;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << "round " << r << " is not a permutation";
        for (std::size_t pos = 0; pos < n; ++pos) ++seen[order[pos]][pos];
      }
      for (std::size_t c = 0; c < n; ++c)
        for (std::size_t pos = 0; pos < n; ++pos) EXPECT_EQ(seen[c][pos], 1) << "n " << n << " from round " << first;
    }
  }
  EXPECT_TRUE(round_order(0, 0, 1, true).empty());
}

TEST(TimingPlan, ReadFromTheValidatedSublist) {
  plexus::ParameterList p("plexus");
  p.sublist("Timing").set("WarmUp", 0);
  p.sublist("Timing").set("Rounds", 4);
  p.sublist("Timing").set("Order", std::string("fixed"));
  const auto plan = plexus::app::timing_of(p);
  EXPECT_EQ(plan.warm_up, 0);
  EXPECT_EQ(plan.rounds, 4);
  EXPECT_FALSE(plan.rotate);
  EXPECT_EQ(plan.total_rounds(), 4);
  EXPECT_FALSE(plan.is_warm_up(0));
}

}  // namespace
