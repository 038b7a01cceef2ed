// A run's summary (app::summarize) over the ranks: each multiply's time is its slowest rank's,
// figures per multiply are summed or taken at their maximum over ranks, and steps kept as totals
// give what every report gives. Runs on several rank counts, each rank with reports of its own.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app.hpp"

namespace {

// Each multiply's time is its slowest rank's; the statistics are over those per-multiply times.
TEST(Summary, PerMultiplyTimesAreMaxOverRanks) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Multiply i takes 1 + i seconds on the last rank and less elsewhere; multiply 3 is the slow one.
  const std::vector<double> slowest = {1.0, 2.0, 3.0, 10.0, 2.0};
  std::vector<plexus::MultiplyReport> reports(slowest.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    reports[i].seconds = rank == size - 1 ? slowest[i] : slowest[i] / 2;
    reports[i].flops = 1e9;
  }
  const auto s = plexus::app::summarize(reports, MPI_COMM_WORLD);
  EXPECT_EQ(s.multiplies, 5);
  EXPECT_EQ(s.times, slowest);
  EXPECT_DOUBLE_EQ(s.seconds_min, 1.0);
  EXPECT_DOUBLE_EQ(s.seconds_median, 2.0);
  EXPECT_DOUBLE_EQ(s.seconds, 3.6);
  EXPECT_DOUBLE_EQ(s.seconds_max, 10.0);
  EXPECT_DOUBLE_EQ(s.gflops, size * 1e9 / 2.0 * 1e-9);
}

// Steps kept as totals (StepTotals, two runs appended) give the figures a summary computes from
// every report: checked against sums and maxima taken here, per rank, then over the ranks.
TEST(Summary, StepTotalsGiveTheFiguresOfEveryReport) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<plexus::MultiplyReport> reports(7);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    auto& r = reports[i];
    const double x = static_cast<double>(i + 1) + 0.25 * rank;
    r.strategy = "s" + std::to_string(i);
    r.seconds = 2.0 * x;
    r.kernel_seconds = 0.5 * x;
    r.flops = 1e6 * x;
    r.ticks = static_cast<int>(i % 3) + rank;
    r.ticks_with_products = static_cast<std::int64_t>(i);
    r.replayed_ticks = static_cast<std::int64_t>(i % 2);
    r.peak_memory_bytes = static_cast<std::int64_t>(1000 * ((i * 5) % 7) + rank);
    r.traffic[0].bytes_sent = static_cast<std::int64_t>(100 * (i + 1));
    r.traffic[1].bytes_received = static_cast<std::int64_t>(10 * (i + 1));
    r.traffic[1].wait_seconds = 0.125 * x;
    r.traffic[3].messages_sent = static_cast<std::int64_t>(i + rank);
    r.extra["fused_ticks"] = i % 2 ? 1.0 : 0.0;
    if (i >= 4) r.extra["predicted_bytes_received"] = 64.0 * x;
  }
  plexus::StepTotals first, second;
  for (std::size_t i = 0; i < 3; ++i) first.add(reports[i]);
  for (std::size_t i = 3; i < reports.size(); ++i) second.add(reports[i]);
  first.append(second);
  ASSERT_EQ(first.count(), reports.size());
  EXPECT_EQ(first.sum.strategy, "s0");
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(first.seconds[i], reports[i].seconds);
    EXPECT_DOUBLE_EQ(first.beyond[i], reports[i].seconds - reports[i].kernel_seconds - reports[i].wait_seconds());
  }
  const auto s = plexus::app::summarize(first, MPI_COMM_WORLD);
  // Each figure as the summary defines it, from the reports directly.
  const double n = static_cast<double>(reports.size());
  double flops = 0, bytes = 0, wait = 0, model = 0, fused = 0, peak = 0, ticks = 0, replayed = 0;
  for (const auto& r : reports) {
    flops += r.flops;
    bytes += static_cast<double>(r.bytes_sent());
    wait += r.wait_seconds();
    fused += r.extra.at("fused_ticks");
    if (r.extra.contains("predicted_bytes_received")) model += r.extra.at("predicted_bytes_received");
    peak = std::max(peak, static_cast<double>(r.peak_memory_bytes));
    ticks = std::max(ticks, static_cast<double>(r.ticks));
    replayed += static_cast<double>(r.replayed_ticks);
  }
  auto max_over_ranks = [](double v) {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return v;
  };
  auto sum_over_ranks = [](double v) {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return v;
  };
  EXPECT_EQ(s.multiplies, 7);
  EXPECT_DOUBLE_EQ(s.flops, sum_over_ranks(flops / n));
  EXPECT_DOUBLE_EQ(s.flops_max, max_over_ranks(flops / n));
  EXPECT_DOUBLE_EQ(s.bytes_max, max_over_ranks(bytes / n));
  EXPECT_DOUBLE_EQ(s.wait_max, max_over_ranks(wait / n));
  EXPECT_DOUBLE_EQ(s.model_max, max_over_ranks(model / n));
  EXPECT_DOUBLE_EQ(s.peak_memory_max, max_over_ranks(peak));
  EXPECT_DOUBLE_EQ(s.ticks_max, max_over_ranks(ticks));
  EXPECT_DOUBLE_EQ(s.replayed_ticks, sum_over_ranks(replayed));
  EXPECT_DOUBLE_EQ(s.extra.at("fused_ticks"), max_over_ranks(fused / n));
  // The same figures from the reports themselves.
  const auto every = plexus::app::summarize(reports, MPI_COMM_WORLD);
  EXPECT_EQ(every.times, s.times);
  EXPECT_DOUBLE_EQ(every.beyond_kernel_wait_median, s.beyond_kernel_wait_median);
  EXPECT_DOUBLE_EQ(every.volume_avg, s.volume_avg);
}

// The work balance is the busiest rank's flops over the average rank's: rank r does r + 1 units of
// work in every multiply, so the busiest does P of the P(P + 1)/2 in all.
TEST(Summary, WorkBalanceIsTheBusiestRanksShareOverTheAverage) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<plexus::MultiplyReport> reports(4);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    reports[i].seconds = 1.0;
    reports[i].flops = 1e6 * static_cast<double>((rank + 1) * (i + 1));
  }
  const auto s = plexus::app::summarize(reports, MPI_COMM_WORLD);
  const double per_multiply = 1e6 * (1 + 2 + 3 + 4) / 4.0;  // a unit of work, averaged over the multiplies
  EXPECT_DOUBLE_EQ(s.flops, per_multiply * size * (size + 1) / 2.0);
  EXPECT_DOUBLE_EQ(s.flops_max, per_multiply * size);
  EXPECT_DOUBLE_EQ(s.work_balance(), 2.0 * size / (size + 1.0));
  // An even split, and a run without products, both read 1.
  for (auto& r : reports) r.flops = 5e6;
  EXPECT_DOUBLE_EQ(plexus::app::summarize(reports, MPI_COMM_WORLD).work_balance(), 1.0);
  for (auto& r : reports) r.flops = 0;
  EXPECT_DOUBLE_EQ(plexus::app::summarize(reports, MPI_COMM_WORLD).work_balance(), 1.0);
  // A strategy that cannot count its ranks' products (an external library): no balance.
  for (auto& r : reports) {
    r.flops = 5e6;
    r.extra["skipped_products_not_counted"] = 1;
  }
  EXPECT_TRUE(std::isnan(plexus::app::summarize(reports, MPI_COMM_WORLD).work_balance()));
}

}  // namespace
