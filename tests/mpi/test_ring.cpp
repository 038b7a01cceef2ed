// The ring strategy: circulate on whole rings and sub-rings, with one and two threads and both
// directions (every buffer visits every rank of its ring exactly once, intact, and each rank
// sends and receives exactly S-1 buffers), the core default circulate, the reduction across
// sub-rings, and the 1D ring multiply against the dense product, Cannon and its volume model.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <span>
#include <thread>

#include "multiply_fixtures.hpp"

using namespace plexus;
using namespace plexus::test;
using plexus::mpi::Role;
using plexus::mpi::Traffic;

namespace {

double value(int origin, int thread, int i) { return origin * 1000.0 + thread * 100.0 + i * 0.5; }

// The sub-ring sizes that divide the rank count (0: one ring of all ranks).
std::vector<int> subring_sizes() {
  std::vector<int> out{0};
  for (int s : {1, 2, 3})
    if (plexus::mpi::size(MPI_COMM_WORLD) % s == 0 && s != plexus::mpi::size(MPI_COMM_WORLD)) out.push_back(s);
  return out;
}

// Circulates one buffer per thread and checks what arrives: from whom, in which order, intact.
void check_circulation(Collectives& strategy, int threads, bool bidirectional) {
  const auto pos = strategy.ring_position(MPI_COMM_WORLD);
  const int S = pos.size, me = plexus::mpi::rank(MPI_COMM_WORLD), base = me - pos.position;
  const int n = 37;
  std::vector<std::vector<int>> origins(static_cast<std::size_t>(threads));
  std::vector<Traffic> traffic(static_cast<std::size_t>(threads));
  std::vector<int> bad(static_cast<std::size_t>(threads), 0);
  auto run = [&](int t) {
    std::vector<double> buf(n);
    for (int i = 0; i < n; ++i) buf[static_cast<std::size_t>(i)] = value(me, t, i);
    strategy.circulate(
        MPI_COMM_WORLD, buf,
        [&](std::span<const double> b, int origin) {
          origins[static_cast<std::size_t>(t)].push_back(origin);
          for (int i = 0; i < n; ++i)
            if (b[static_cast<std::size_t>(i)] != value(origin, t, i)) ++bad[static_cast<std::size_t>(t)];
        },
        traffic[static_cast<std::size_t>(t)], t);
    EXPECT_EQ(buf.size(), static_cast<std::size_t>(n));
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, t);
  run(0);
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    const auto& o = origins[static_cast<std::size_t>(t)];
    EXPECT_EQ(bad[static_cast<std::size_t>(t)], 0) << "corrupted buffers";
    ASSERT_EQ(static_cast<int>(o.size()), S);
    // In ring order: step s brings the buffer of position r - s (r + s going the other way).
    const int dir = bidirectional && t % 2 == 1 ? -1 : 1;
    for (int s = 0; s < S; ++s) EXPECT_EQ(o[static_cast<std::size_t>(s)], base + ((pos.position - dir * s) % S + S) % S);
    // Each rank sends and receives exactly S-1 buffers, nothing else.
    const auto& c = traffic[static_cast<std::size_t>(t)].counts(Role::Other);
    EXPECT_EQ(c.messages_sent, S - 1);
    EXPECT_EQ(c.messages_received, S - 1);
    EXPECT_EQ(c.bytes_sent, std::int64_t{S - 1} * n * 8);
    EXPECT_EQ(c.bytes_received, std::int64_t{S - 1} * n * 8);
  }
}

// A strategy whose collectives make their sub-rings in `pool` (a run's context binds its own).
std::unique_ptr<CommStrategy> bound(CommPool& pool, const std::string& name, const std::vector<std::string>& params) {
  auto s = strategy(name, params);
  s->collectives().bind(pool);
  return s;
}

}  // namespace

TEST(Ring, CirculateOnRingsAndSubRings) {
  CommPool pool;
  for (int S : subring_sizes()) {
    SCOPED_TRACE("SubRingSize=" + std::to_string(S));
    auto r = bound(pool, "ring", {"SubRingSize=" + std::to_string(S)});
    const auto pos = r->ring_position(MPI_COMM_WORLD);
    EXPECT_EQ(pos.size, S == 0 ? plexus::mpi::size(MPI_COMM_WORLD) : S);
    check_circulation(r->collectives(), 1, false);
  }
  pool.release();
}

TEST(Ring, ThreadedAndBidirectionalRings) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "the MPI library gives no MPI_THREAD_MULTIPLE";
  CommPool pool;
  for (int S : subring_sizes())
    for (bool bidi : {false, true}) {
      SCOPED_TRACE("SubRingSize=" + std::to_string(S) + (bidi ? " bidirectional" : ""));
      auto r = bound(pool, "ring", {"SubRingSize=" + std::to_string(S), "Threads=2",
                                 std::string("Bidirectional=") + (bidi ? "true" : "false")});
      EXPECT_EQ(r->circulate_threads(), 2);
      check_circulation(r->collectives(), 2, bidi);
    }
  pool.release();
}

TEST(Ring, CoreDefaultCirculateVisitsEveryRank) {
  auto c = strategy("cannon");  // does not override circulate: the core default
  check_circulation(c->collectives(), 1, false);
  std::vector<double> buf(3, 1.0);
  Traffic t;
  EXPECT_THROW(c->circulate(MPI_COMM_WORLD, buf, [](std::span<const double>, int) {}, t, 1), Error);
}

TEST(Ring, CollectivesComponentTakesItsSubRingsFromThePool) {
  test::load_plugins();
  for (int S : subring_sizes()) {
    SCOPED_TRACE("SubRingSize=" + std::to_string(S));
    ParameterList p("ring");
    apply_override(p, "SubRingSize=" + std::to_string(S));
    auto c = Registry::global().make_collectives("ring", p, "Communication/ring");
    Traffic t;
    std::vector<double> buf(2, 0.0);
    EXPECT_THROW(c->circulate(MPI_COMM_WORLD, buf, [](std::span<const double>, int) {}, t, 0), Error)
        << "an unbound component refuses to make communicators";
    CommPool pool;
    c->bind(pool);
    check_circulation(*c, 1, false);
    EXPECT_EQ(pool.size(), 2u) << "the ring and the cross-ring communicators, made once";
    check_circulation(*c, 1, false);
    EXPECT_EQ(pool.size(), 2u);
    pool.release();
  }
}

TEST(Ring, SubRingSizeMustDivideTheRanks) {
  if (plexus::mpi::size(MPI_COMM_WORLD) < 2) GTEST_SKIP() << "every size divides 1";
  CommPool pool;
  auto r = bound(pool, "ring", {"SubRingSize=" + std::to_string(plexus::mpi::size(MPI_COMM_WORLD) + 1)});
  std::vector<double> buf(4, 0.0);
  Traffic t;
  EXPECT_THROW(r->circulate(MPI_COMM_WORLD, buf, [](std::span<const double>, int) {}, t, 0), InputError);
  EXPECT_EQ(pool.size(), 0u) << "refused before any communicator was made";
}

TEST(Ring, SubRingsAreRemadeAfterThePoolIsReleased) {
  // A strategy outlives runs: after its pool is released (or it is bound to another), its
  // sub-rings must be made again, not taken from a cache of freed handles.
  CommPool first, second;
  auto r = bound(first, "ring", {});
  check_circulation(r->collectives(), 1, false);
  EXPECT_EQ(first.size(), 2u);
  first.release();
  check_circulation(r->collectives(), 1, false);
  EXPECT_EQ(first.size(), 2u) << "made again in the released pool";
  r->collectives().bind(second);
  check_circulation(r->collectives(), 1, false);
  EXPECT_EQ(second.size(), 2u) << "made again in the newly bound pool";
  first.release();
  second.release();
}

TEST(Ring, UnboundCollectivesRefuseToCirculate) {
  auto r = strategy("ring", {});
  std::vector<double> buf(4, 0.0);
  Traffic t;
  EXPECT_THROW(r->circulate(MPI_COMM_WORLD, buf, [](std::span<const double>, int) {}, t, 0), Error);
}

TEST(Ring, ReduceAcrossSubRingsSumsEqualPositions) {
  CommPool pool;
  for (int S : subring_sizes()) {
    SCOPED_TRACE("SubRingSize=" + std::to_string(S));
    auto r = bound(pool, "ring", {"SubRingSize=" + std::to_string(S)});
    const auto pos = r->ring_position(MPI_COMM_WORLD);
    std::vector<double> v{double(plexus::mpi::rank(MPI_COMM_WORLD)), 1.0};
    Traffic t;
    r->reduce_across_rings(MPI_COMM_WORLD, v, t);
    // Ranks at my position: pos, pos + S, pos + 2S, ...
    double expect = 0;
    int rings = 0;
    for (int q = pos.position; q < plexus::mpi::size(MPI_COMM_WORLD); q += pos.size, ++rings) expect += q;
    EXPECT_EQ(v[0], expect);
    EXPECT_EQ(v[1], double(rings));
  }
  pool.release();
}

TEST(Ring, MultiplyMatchesDenseCannonAndItsVolumeModel) {
  for (const Case& k : {Case{"mixed", 11, 13, 9, {1, 5, 13, 23, 32}, 0.35, -0.75, 1.5, "random", "cpu"},
                        Case{"uniform", 12, 12, 12, {7}, 0.3, 1.0, 0.0, "block-cyclic", "reference"}}) {
    SCOPED_TRACE(k.name);
    auto ring = strategy("ring");
    auto grid = Grid::create(MPI_COMM_WORLD);
    // The ring asks for 1D block rows; build the operands on the distribution it gives.
    auto line_a = ring->distribution_for(Distribution::by_name(k.dist, grid, k.rows, k.inner, 17));
    auto line_b = ring->distribution_for(Distribution::by_name(k.dist, grid, k.inner, k.cols, 17));
    auto line_c = ring->distribution_for(Distribution::by_name(k.dist, grid, k.rows, k.cols, 17));
    ASSERT_EQ(line_a->grid().npcols(), 1);
    Operands two_d = make_operands(k, grid);
    DistMatrix a = two_d.a.redistribute(line_a), b = two_d.b.redistribute(line_b), c = two_d.c.redistribute(line_c);
    const auto ref = expected_c(k, two_d);
    auto kern = kernel(k.kernel);
    const MultiplyReport rep = ring->multiply(k.alpha, a, b, k.beta, c, *kern, MultiplyOptions{});
    EXPECT_LE(relative_error(c.to_dense(), ref), 1e-12);
    auto cannon = strategy("cannon");
    cannon->multiply(k.alpha, two_d.a, two_d.b, k.beta, two_d.c, *kern, MultiplyOptions{});
    EXPECT_LE(relative_error(c.to_dense(), two_d.c.to_dense()), 1e-12) << "differs from Cannon";
    // Volume: every rank receives the P-1 other row panels of B, nothing else.
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(plexus::mpi::size(MPI_COMM_WORLD)));
    const std::int64_t mine = b.local().data_size() * 8;
    MPI_Allgather(&mine, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    std::int64_t expect = 0;
    for (int q = 0; q < plexus::mpi::size(MPI_COMM_WORLD); ++q)
      if (q != plexus::mpi::rank(MPI_COMM_WORLD)) expect += sizes[static_cast<std::size_t>(q)];
    EXPECT_EQ(rep.traffic[1].bytes_received, expect);
    EXPECT_EQ(rep.traffic[1].messages_received, 2 * (plexus::mpi::size(MPI_COMM_WORLD) - 1));  // index and values per step
    EXPECT_EQ(rep.extra.at("predicted_bytes_received"), static_cast<double>(expect));
    EXPECT_EQ(rep.traffic[0].bytes_received + rep.traffic[2].bytes_received, 0);
  }
}

TEST(Ring, MultiplyRefusesTwoDimensionalOperands) {
  if (plexus::mpi::size(MPI_COMM_WORLD) < 4) GTEST_SKIP() << "needs a grid with two process columns";
  auto grid = Grid::create(MPI_COMM_WORLD);
  Case k{"2d", 6, 6, 6, {2}, 0.5, 1.0, 0.0, "block-cyclic", "cpu"};
  Operands o = make_operands(k, grid);
  auto kern = kernel("cpu");
  EXPECT_THROW(strategy("ring")->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{}), Error);
}
