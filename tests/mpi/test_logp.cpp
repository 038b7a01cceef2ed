// logp::measure on the job's ranks: finite, non-negative parameters, the same on every rank (ranks
// 0 and 1 measure, the others wait), positive o_s, g and G on two ranks or more, all zero on one
// rank; bad options refused on every rank alike. No timing thresholds: only signs and agreement.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/logp.hpp"
#include "plexus/mpi.hpp"

using namespace plexus;

namespace {

// Short: a few repetitions, messages up to 16 KiB.
logp::MeasureOptions quick() {
  logp::MeasureOptions o;
  o.repetitions = 3;
  o.max_bytes = 16 * 1024;
  o.train = 8;
  return o;
}

// The values every rank got, gathered: rank 0 checks they are identical bit for bit.
std::vector<double> flat(const logp::Parameters& p) {
  std::vector<double> v = {p.L, p.o_s, p.o_r, p.g, p.G, double(p.ranks), double(p.samples.size())};
  for (const auto& s : p.samples) v.insert(v.end(), {s.bytes, s.rtt, s.o_s, s.o_r, s.g});
  return v;
}

TEST(LogpMeasure, SameOnEveryRankFiniteNonNegative) {
  const int size = mpi::size(MPI_COMM_WORLD), rank = mpi::rank(MPI_COMM_WORLD);
  int progress_calls = 0;
  auto options = quick();
  options.on_progress = [&](int done, int total) {
    ++progress_calls;
    EXPECT_LE(done, total);
  };
  const logp::Parameters p = logp::measure(MPI_COMM_WORLD, options);
  EXPECT_EQ(p.ranks, size);
  EXPECT_EQ(p.source, "measured");
  const auto mine = flat(p);
  for (double v : mine) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GE(v, 0.0);
  }
  // Identical on every rank.
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int c : counts) ASSERT_EQ(c, n);
  std::vector<double> all(static_cast<std::size_t>(n) * size);
  MPI_Allgather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < n; ++i) EXPECT_EQ(all[static_cast<std::size_t>(r) * n + i], mine[i]) << "rank " << r;

  if (size == 1) {
    // Documented: nothing to measure on one rank; every parameter 0, and a note says why.
    EXPECT_EQ(p.L + p.o_s + p.o_r + p.g + p.G, 0.0);
    EXPECT_TRUE(p.samples.empty());
    ASSERT_FALSE(p.notes.empty());
    EXPECT_NE(p.notes[0].find("one rank"), std::string::npos);
    EXPECT_EQ(progress_calls, 0);
    return;
  }
  EXPECT_GT(p.o_s, 0.0);
  EXPECT_GT(p.g, 0.0);
  EXPECT_GT(p.G, 0.0);
  EXPECT_EQ(p.samples.size(), logp::message_sizes(options.max_bytes).size());
  for (const auto& s : p.samples) {
    EXPECT_GT(s.rtt, 0.0);
    EXPECT_GT(s.g, 0.0);
  }
  EXPECT_EQ(progress_calls, rank == 0 ? int(p.samples.size()) : 0);
  // The model at one byte reproduces RTT(1) unless L was clamped at 0.
  if (p.L > 0) {
    EXPECT_NEAR(logp::pingpong_seconds(p, 1), p.samples[0].rtt, 1e-12);
  }
}

TEST(LogpMeasure, BadOptionsRefusedOnEveryRank) {
  auto o = quick();
  o.repetitions = 0;
  EXPECT_THROW(logp::measure(MPI_COMM_WORLD, o), InputError);
  o = quick();
  o.max_bytes = 100;
  EXPECT_THROW(logp::measure(MPI_COMM_WORLD, o), InputError);
  o = quick();
  o.train = -1;
  EXPECT_THROW(logp::measure(MPI_COMM_WORLD, o), InputError);
  // Still in step: a collective after the refusals completes.
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(LogpMeasure, SubCommunicator) {
  // Measured on the even ranks only (every rank calls measure on its own half).
  const int rank = mpi::rank(MPI_COMM_WORLD);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  auto o = quick();
  o.max_bytes = 1024;
  const auto p = logp::measure(half, o);
  EXPECT_EQ(p.ranks, mpi::size(half));
  EXPECT_GE(p.G, 0.0);
  MPI_Comm_free(&half);
}

}  // namespace
