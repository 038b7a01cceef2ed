// plexus::timers on one rank: names, labels, counts, nesting, reset, enabled(false), threads, and
// the table. Timers are process-wide state: each test uses names of its own.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "plexus/timers.hpp"

namespace timers = plexus::timers;

namespace {

std::optional<timers::Stat> find(const std::vector<timers::Stat>& stats, const std::string& name) {
  for (const auto& s : stats)
    if (s.name == name) return s;
  return std::nullopt;
}

std::vector<timers::Stat> stats() { return timers::statistics(MPI_COMM_WORLD); }

// Relative agreement of two sums of the same intervals (rounding only).
void expect_same_seconds(double a, double b) { EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::abs(b))); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST(Timers, NamesCountsAndSeconds) {
  double a_seconds = 0;
  for (int i = 0; i < 3; ++i) timers::Scoped t("names: a", &a_seconds);
  { timers::Scoped t("names: b"); }
  const auto s = stats();
  const auto a = find(s, "names: a"), b = find(s, "names: b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->calls, 3);
  EXPECT_EQ(b->calls, 1);
  // One rank: min, mean and max are its own total, which is what the scopes added up.
  EXPECT_EQ(a->min, a->max);
  EXPECT_EQ(a->mean, a->max);
  EXPECT_EQ(a->calls_at_min, 3);
  EXPECT_EQ(a->calls_at_max, 3);
  EXPECT_GE(a->min, 0.0);
  expect_same_seconds(a_seconds, a->max);
  // Ordered by name.
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end(), [](const auto& x, const auto& y) { return x.name < y.name; }));
}

TEST(Timers, StopEndsThePhaseOnce) {
  double sink = 0;
  timers::Scoped t("stop: once", &sink);
  const double first = t.stop();
  EXPECT_EQ(sink, first);
  EXPECT_EQ(t.stop(), first);  // the same seconds, added once
  EXPECT_EQ(t.elapsed(), first);
  EXPECT_EQ(sink, first);
  const auto s = find(stats(), "stop: once");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->calls, 1);
  expect_same_seconds(first, s->max);
}

TEST(Timers, LabelsPrefixNamesAndNest) {
  EXPECT_EQ(timers::current_prefix(), "");
  {
    timers::Label combo("cannon/cpu");
    EXPECT_EQ(timers::current_prefix(), "cannon/cpu: ");
    { timers::Scoped t("labels: kernel"); }
    {
      timers::Label inner("warm-up");
      EXPECT_EQ(timers::current_prefix(), "cannon/cpu: warm-up: ");
      timers::Scoped t("labels: kernel");
    }
    timers::Label none("");  // adds nothing
    EXPECT_EQ(timers::current_prefix(), "cannon/cpu: ");
  }
  EXPECT_EQ(timers::current_prefix(), "");
  { timers::Scoped t("labels: kernel"); }
  const auto s = stats();
  for (const char* name : {"cannon/cpu: labels: kernel", "cannon/cpu: warm-up: labels: kernel", "labels: kernel"}) {
    const auto st = find(s, name);
    ASSERT_TRUE(st) << name;
    EXPECT_EQ(st->calls, 1) << name;
  }
}

TEST(Timers, NestedSameNameCountsTheOutermostOnly) {
  double outer_seconds = 0, inner_seconds = 0;
  {
    timers::Scoped outer("nesting: phase", &outer_seconds);
    {
      timers::Scoped inner("nesting: phase", &inner_seconds);  // must not throw
      timers::Scoped innermost("nesting: phase");
    }
  }
  // Recursion through a function.
  std::function<void(int)> recurse = [&](int depth) {
    timers::Scoped t("nesting: recursive");
    if (depth > 0) recurse(depth - 1);
  };
  recurse(4);
  recurse(0);
  const auto s = stats();
  const auto phase = find(s, "nesting: phase"), rec = find(s, "nesting: recursive");
  ASSERT_TRUE(phase && rec);
  EXPECT_EQ(phase->calls, 1);
  EXPECT_EQ(rec->calls, 2);
  // Each scope fed its own sink; the inner interval lies inside the outer one.
  expect_same_seconds(outer_seconds, phase->max);
  EXPECT_GE(inner_seconds, 0.0);
  EXPECT_LE(inner_seconds, outer_seconds);
}

TEST(Timers, ResetZeroesEverything) {
  for (int i = 0; i < 2; ++i) timers::Scoped t("reset: before");
  double across = 0;
  timers::Scoped running("reset: across", &across);
  ASSERT_TRUE(find(stats(), "reset: before"));
  timers::reset();
  // Timers without calls since the reset are left out of the statistics.
  EXPECT_FALSE(find(stats(), "reset: before"));
  { timers::Scoped t("reset: before"); }
  running.stop();  // ran across the reset: counts from the reset on, as one call
  const auto s = stats();
  const auto before = find(s, "reset: before"), acr = find(s, "reset: across");
  ASSERT_TRUE(before && acr);
  EXPECT_EQ(before->calls, 1);
  EXPECT_EQ(acr->calls, 1);
  EXPECT_GE(across, acr->max);  // the scope's own seconds cover its whole life, the timer's the part after
}

TEST(Timers, DisabledRecordsNothingButFeedsSinks) {
  ASSERT_TRUE(timers::enabled());
  timers::enabled(false);
  EXPECT_FALSE(timers::enabled());
  double sink = 0;
  {
    timers::Scoped t("disabled: phase", &sink);
    timers::Scoped u("disabled: phase", &sink);
  }
  timers::enabled(true);
  EXPECT_GE(sink, 0.0);
  EXPECT_FALSE(find(stats(), "disabled: phase"));
  // A scope begun while enabled finishes as it began.
  {
    timers::Scoped t("disabled: begun enabled");
    timers::enabled(false);
  }
  timers::enabled(true);
  const auto s = find(stats(), "disabled: begun enabled");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->calls, 1);
}

TEST(Timers, OtherThreadsAndParallelRegionsRecordNothing) {
  double thread_seconds = -1;
  std::string thread_prefix = "unset";
  std::thread th([&] {
    timers::Label l("thread");
    thread_prefix = timers::current_prefix();
    double s = 0;
    { timers::Scoped t("threads: std::thread", &s); }
    thread_seconds = s;
  });
  th.join();
  EXPECT_EQ(thread_prefix, "");
  EXPECT_GE(thread_seconds, 0.0);  // fed, though nothing is recorded
  EXPECT_EQ(timers::current_prefix(), "");

  std::vector<double> per_thread(2, -1.0);
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    double s = 0;
    { timers::Scoped t("threads: omp", &s); }
    per_thread[static_cast<std::size_t>(omp_get_thread_num())] = s;
#pragma omp single
    team = omp_get_num_threads();
  }
  const auto s = stats();
  EXPECT_FALSE(find(s, "threads: std::thread"));
  for (int t = 0; t < team; ++t) EXPECT_GE(per_thread[static_cast<std::size_t>(t)], 0.0);
  if (team > 1) {  // a team of one is no parallel region
    EXPECT_FALSE(find(s, "threads: omp"));
  }
}

TEST(Timers, TableFitsAndSaysWhatItHolds) {
  EXPECT_EQ(timers::table({}), "");
  const std::string long_name =
      "rma25d:Layers=4:SomeVeryLongParameter=42/cpu: " + std::string(80, 'x') + ": multiply: run";
  std::vector<timers::Stat> st(3);
  st[0] = {"cannon/cpu: multiply: run", 10, 0.25, 0.5, 0.75, 10, 10};
  st[1] = {long_name, 0.5, 0, 1.5e-6, 3e-6, 0, 1};
  st[2] = {"g4: accumulate", 3, 1234.5, 2345.25, 3456.125, 3, 3};
  const std::string text = timers::table(st);
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) EXPECT_LE(static_cast<int>(l.size()), timers::kTableWidth) << l;
  for (const char* word : {"timer", "calls", "min s", "mean s", "max s"})
    EXPECT_NE(lines[0].find(word), std::string::npos) << word;
  EXPECT_EQ(lines[1].rfind("cannon/cpu: multiply: run", 0), 0u);
  EXPECT_NE(lines[1].find(" 10 "), std::string::npos);
  EXPECT_NE(lines[1].find("0.25"), std::string::npos);
  EXPECT_NE(lines[1].find("0.75"), std::string::npos);
  // The long name keeps its start and its end.
  EXPECT_EQ(lines[2].rfind("rma25d:Layers=4", 0), 0u);
  EXPECT_NE(lines[2].find("..."), std::string::npos);
  EXPECT_NE(lines[2].find("xx: multiply: run"), std::string::npos);
  EXPECT_NE(lines[2].find(" 0.5 "), std::string::npos);
  EXPECT_NE(lines[2].find("3e-06"), std::string::npos);
  EXPECT_NE(lines[3].find("3456"), std::string::npos);
  // Columns line up: every line as wide as the header.
  for (const auto& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << l;
  // The statistics of this process print the same way.
  { timers::Scoped t("table: " + std::string(200, 'y')); }
  for (const auto& l : lines_of(timers::table(stats()))) EXPECT_LE(static_cast<int>(l.size()), timers::kTableWidth);
}
