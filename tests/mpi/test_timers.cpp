// plexus::timers::statistics over ranks: timers that exist on some ranks only are listed on every
// rank (the union), with their counts and min <= mean <= max, identically everywhere; and over a
// communicator other than MPI_COMM_WORLD.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "plexus/timers.hpp"

namespace timers = plexus::timers;

namespace {

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int n = 0;
  MPI_Comm_size(c, &n);
  return n;
}

const timers::Stat& get(const std::vector<timers::Stat>& stats, const std::string& name) {
  for (const auto& s : stats)
    if (s.name == name) return s;
  ADD_FAILURE() << "no timer '" << name << "'";
  static const timers::Stat none;
  return none;
}

std::set<std::string> names(const std::vector<timers::Stat>& stats) {
  std::set<std::string> n;
  for (const auto& s : stats) n.insert(s.name);
  return n;
}

// Every figure, bit for bit (%a), so that ranks can compare their statistics.
std::string serialise(const std::vector<timers::Stat>& stats) {
  std::string out;
  char buf[512];
  for (const auto& s : stats) {
    std::snprintf(buf, sizeof(buf), "%s|%a|%a|%a|%a|%a|%a\n", s.name.c_str(), s.calls, s.min, s.mean, s.max,
                  s.calls_at_min, s.calls_at_max);
    out += buf;
  }
  return out;
}

// Whether every rank of comm holds the same text as rank 0.
bool same_on_every_rank(const std::string& mine, MPI_Comm comm) {
  int n = static_cast<int>(mine.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, comm);
  std::string root(static_cast<std::size_t>(n), '\0');
  if (rank_of(comm) == 0) root = mine;
  MPI_Bcast(root.data(), n, MPI_CHAR, 0, comm);
  int same = root == mine ? 1 : 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

std::string mine_name(int r) { return "rank " + std::to_string(r) + ": ranks: mine"; }

}  // namespace

TEST(TimersMpi, UnionOfNamesWithCountsOverRanks) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const int rank = rank_of(world), p = size_of(world);
  timers::reset();
  // Nothing has run since the reset: nothing is listed, on any rank.
  EXPECT_TRUE(timers::statistics(world).empty());

  double everywhere = 0;  // this rank's seconds of "ranks: everywhere"
  for (int i = 0; i <= rank; ++i) timers::Scoped t("ranks: everywhere", &everywhere);  // rank + 1 calls
  double only0 = 0;
  if (rank == 0)
    for (int i = 0; i < 2; ++i) timers::Scoped t("ranks: rank 0 only", &only0);
  {
    timers::Label l("rank " + std::to_string(rank));
    timers::Scoped t("ranks: mine");
  }
  const auto stats = timers::statistics(world);

  // The names are the union over ranks, on every rank.
  std::set<std::string> expected{"ranks: everywhere", "ranks: rank 0 only"};
  for (int r = 0; r < p; ++r) expected.insert(mine_name(r));
  EXPECT_EQ(names(stats), expected);
  EXPECT_TRUE(same_on_every_rank(serialise(stats), world));

  for (const auto& s : stats) {
    EXPECT_LE(s.min, s.mean) << s.name;
    EXPECT_LE(s.mean, s.max) << s.name;
    EXPECT_GE(s.min, 0.0) << s.name;
  }

  // Rank r called "everywhere" r + 1 times: the mean count is (p + 1) / 2, and the seconds over
  // ranks are those the scopes measured.
  const auto& all = get(stats, "ranks: everywhere");
  EXPECT_DOUBLE_EQ(all.calls, (p + 1) / 2.0);
  EXPECT_GE(all.calls_at_min, 1);
  EXPECT_LE(all.calls_at_min, p);
  EXPECT_GE(all.calls_at_max, 1);
  EXPECT_LE(all.calls_at_max, p);
  double lo = 0, hi = 0, sum = 0;
  MPI_Allreduce(&everywhere, &lo, 1, MPI_DOUBLE, MPI_MIN, world);
  MPI_Allreduce(&everywhere, &hi, 1, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(&everywhere, &sum, 1, MPI_DOUBLE, MPI_SUM, world);
  EXPECT_NEAR(all.min, lo, 1e-12);
  EXPECT_NEAR(all.max, hi, 1e-12);
  EXPECT_NEAR(all.mean, sum / p, 1e-12);

  // On rank 0 only, twice: the other ranks (if any) count as zero calls and zero seconds.
  const auto& one = get(stats, "ranks: rank 0 only");
  EXPECT_DOUBLE_EQ(one.calls, 2.0 / p);
  if (p > 1) {
    EXPECT_EQ(one.min, 0.0);
  }
  double only0_max = 0;
  MPI_Allreduce(&only0, &only0_max, 1, MPI_DOUBLE, MPI_MAX, world);
  EXPECT_NEAR(one.max, only0_max, 1e-12);
  EXPECT_NEAR(one.mean, only0_max / p, 1e-12);
  if (one.max > 0) {
    EXPECT_EQ(one.calls_at_max, 2);
  }

  // Each rank's own timer: one call on one rank.
  for (int r = 0; r < p; ++r) {
    const auto& m = get(stats, mine_name(r));
    EXPECT_DOUBLE_EQ(m.calls, 1.0 / p);
    if (p > 1) {
      EXPECT_EQ(m.min, 0.0);
    }
  }

  // The table: every line within 100 columns, one line per timer under the header.
  const std::string text = timers::table(stats);
  std::size_t lines = 0, at = 0;
  for (std::size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1, ++lines)
    EXPECT_LE(static_cast<int>(nl - at), timers::kTableWidth);
  EXPECT_EQ(lines, stats.size() + 1);
}

TEST(TimersMpi, OverASubCommunicator) {
  const int rank = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  MPI_Comm half = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half), MPI_SUCCESS);
  timers::reset();
  {
    timers::Label l("rank " + std::to_string(rank));
    timers::Scoped t("ranks: mine");
  }
  const auto stats = timers::statistics(half);
  // The union over this half only: the ranks of my parity.
  std::set<std::string> expected;
  for (int r = rank % 2; r < p; r += 2) expected.insert(mine_name(r));
  EXPECT_EQ(names(stats), expected);
  EXPECT_TRUE(same_on_every_rank(serialise(stats), half));
  const int n = size_of(half);
  for (const auto& s : stats) EXPECT_DOUBLE_EQ(s.calls, 1.0 / n) << s.name;
  MPI_Comm_free(&half);
}
