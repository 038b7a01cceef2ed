// DistMatrix on several ranks: every result is compared with the same operation on the dense
// matrix built directly from the generator's definition.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "dense_reference.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/generator.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/mpi.hpp"

using namespace plexus;

namespace {

BlockLayout mixed(int nb) {
  auto s = BlockSizes::cyclic(nb, {1, 5, 13, 4});
  return BlockLayout{s, s};
}

GeneratorSpec spec(std::uint64_t seed, double occ, bool sym = false) {
  GeneratorSpec s;
  s.seed = seed;
  s.occupancy = occ;
  s.symmetric = sym;
  return s;
}

// The dense matrix straight from the generator's definition (rank-independent by construction).
std::vector<double> dense_from_definition(const BlockLayout& l, const GeneratorSpec& s) {
  const std::int64_t nr = l.rows.total();
  std::vector<double> d(static_cast<std::size_t>(nr * l.cols.total()), 0.0);
  for (int i = 0; i < l.rows.count(); ++i)
    for (int j = 0; j < l.cols.count(); ++j) {
      if (!generator_block_present(s, i, j) && !(s.force_diagonal && i == j)) continue;
      for (int c = 0; c < l.cols.size(j); ++c)
        for (int r = 0; r < l.rows.size(i); ++r)
          d[static_cast<std::size_t>((l.cols.offset(j) + c) * nr + l.rows.offset(i) + r)] =
              generator_value(s, i, j, r, c, l.rows.size(i), l.cols.size(j));
    }
  return d;
}

}  // namespace

// exchange_blocks delivers every block sent to a rank, with its tag and values, sorted by (tag,
// row, col): with few tags (a counting pass and merged runs) and with tags spread wider than the
// blocks (a plain sort). Each rank's panel and every block's destination and tag follow from
// (rank, row, col), so every rank knows independently what it must receive.
TEST(Exchange, EveryRankGetsItsBlocksSortedByTagRowAndColumn) {
  const int p = plexus::mpi::size(MPI_COMM_WORLD), me = plexus::mpi::rank(MPI_COMM_WORLD);
  const plexus::BlockSizes s = plexus::BlockSizes::cyclic(30, {1, 2, 3});
  const plexus::BlockLayout l{s, s};
  // Rank q holds rows i with i % p == q, block (i, j) when (i * 7 + j * 3 + q) % 4 != 0.
  auto holds = [&](int q, int i, int j) { return i % p == q && (i * 7 + j * 3 + q) % 4 != 0; };
  auto value = [](int i, int j, int e) { return i * 1000.0 + j + e * 1e-3; };
  for (const int spread : {3, 100000}) {
    SCOPED_TRACE("tags in [0, " + std::to_string(spread) + ")");
    auto dest = [&](int i, int j, int& tag) {
      tag = (i * 31 + j * 17) % spread;
      return (i + 2 * j) % p;
    };
    std::vector<int> rows;
    for (int i = me; i < 30; i += p) rows.push_back(i);
    plexus::Panel mine(rows);
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (int j = 0; j < 30; ++j)
        if (holds(me, rows[r], j)) {
          const int n = s.size(rows[r]) * s.size(j);
          double* x = mine.append_block(static_cast<int>(r), j, n);
          for (int e = 0; e < n; ++e) x[e] = value(rows[r], j, e);
        }
    plexus::mpi::Traffic traffic;
    const plexus::ExchangedBlocks got = plexus::exchange_blocks(mine.view(), l, MPI_COMM_WORLD, dest, traffic,
                                                                      plexus::mpi::Role::Other);
    std::set<std::tuple<int, int, int>> expect;  // (tag, row, col) of every block sent to me
    for (int q = 0; q < p; ++q)
      for (int i = 0; i < 30; ++i)
        for (int j = 0; j < 30; ++j) {
          int tag = 0;
          if (holds(q, i, j) && dest(i, j, tag) == me) expect.emplace(tag, i, j);
        }
    ASSERT_EQ(got.blocks.size(), expect.size());
    auto e = expect.begin();
    for (const auto& b : got.blocks) {
      EXPECT_EQ(std::make_tuple(b.tag, b.row, b.col), *e) << "in (tag, row, col) order";
      ++e;
      const int n = s.size(b.row) * s.size(b.col);
      for (int q = 0; q < n; ++q)
        ASSERT_EQ(got.values[static_cast<std::size_t>(b.offset + q)], value(b.row, b.col, q));
    }
  }
}

TEST(DistMatrix, GeneratorIsIndependentOfRanksAndDistribution) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(11);
  const auto s = spec(3, 0.35, true);
  const auto ref = dense_from_definition(l, s);
  for (const char* kind : {"block-cyclic", "random"}) {
    DistMatrix m = generate_random("A", Distribution::by_name(kind, grid, 11, 11, 9), l, s);
    EXPECT_EQ(m.to_dense(), ref) << kind;
  }
}

TEST(DistMatrix, RedistributeKeepsEveryBlock) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(13);
  const auto s = spec(4, 0.4);
  DistMatrix a = generate_random("A", Distribution::block_cyclic(grid, 13, 13), l, s);
  DistMatrix b = a.redistribute(Distribution::random_permuted(grid, 13, 13, 77));
  EXPECT_EQ(b.to_dense(), a.to_dense());
  EXPECT_EQ(b.global_nblocks(), a.global_nblocks());
  auto line = Grid::create(MPI_COMM_WORLD, grid->size(), 1);
  DistMatrix c = b.redistribute(Distribution::rows_1d(line, 13, 13));
  EXPECT_EQ(c.to_dense(0), a.to_dense(0));
}

TEST(DistMatrix, AlgebraMatchesDense) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(10);
  auto d1 = Distribution::block_cyclic(grid, 10, 10);
  auto d2 = Distribution::random_permuted(grid, 10, 10, 5);
  const auto sa = spec(5, 0.3), sb = spec(6, 0.5);
  const auto A = dense_from_definition(l, sa), B = dense_from_definition(l, sb);
  DistMatrix a = generate_random("A", d1, l, sa);
  DistMatrix b = generate_random("B", d2, l, sb);  // another distribution: add/dot redistribute

  double dot = 0, na = 0, tr = 0;
  const std::int64_t n = l.rows.total();
  for (std::size_t q = 0; q < A.size(); ++q) {
    dot += A[q] * B[q];
    na += A[q] * A[q];
  }
  for (std::int64_t i = 0; i < n; ++i) tr += A[static_cast<std::size_t>(i + i * n)];
  EXPECT_NEAR(a.dot(b), dot, 1e-12 * std::sqrt(na) * 10);
  EXPECT_NEAR(a.frobenius_norm(), std::sqrt(na), 1e-12 * std::sqrt(na));
  EXPECT_NEAR(a.trace(), tr, 1e-12 * std::sqrt(na));

  DistMatrix c = a;
  c.add(2.0, -0.5, b);
  std::vector<double> ref(A.size());
  for (std::size_t q = 0; q < A.size(); ++q) ref[q] = 2.0 * A[q] - 0.5 * B[q];
  EXPECT_LE(test::relative_error(c.to_dense(), ref), 1e-15);

  c.scale(-3.0);
  c.add_identity(1.5);
  for (auto& x : ref) x *= -3.0;
  for (std::int64_t i = 0; i < n; ++i) ref[static_cast<std::size_t>(i + i * n)] += 1.5;
  EXPECT_LE(test::relative_error(c.to_dense(), ref), 1e-15);
}

// The kernel's threads share scale and the norm (algebra.cpp): shares of at least 16 K values
// each, so the matrix is large enough for three (about 150 K values over the ranks).
TEST(DistMatrix, ScaleAndNormOnSeveralThreadsMatchDense) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(72);
  const auto sa = spec(11, 0.9);
  const auto A = dense_from_definition(l, sa);
  double na = 0;
  for (double x : A) na += x * x;
  for (const int threads : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    DistMatrix a = generate_random("A", Distribution::block_cyclic(grid, 72, 72), l, sa);
    EXPECT_NEAR(a.frobenius_norm(threads), std::sqrt(na), 1e-13 * std::sqrt(na));
    a.scale(-0.75, threads);
    std::vector<double> ref(A);
    for (auto& x : ref) x *= -0.75;
    EXPECT_EQ(a.to_dense(), ref);  // each value scaled once, exactly as here
  }
}

// add, dot and a panel's copy on the kernel's threads (1, 2 and 3), on a matrix large enough for
// three shares: add over two patterns (a fresh panel from both rows' union) and over one pattern
// (in place), dot of two patterns and of a matrix with itself, each against the dense matrices.
TEST(DistMatrix, AddDotAndCopyOnSeveralThreadsMatchDense) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(72);
  const auto sa = spec(11, 0.6), sb = spec(12, 0.6);
  const auto A = dense_from_definition(l, sa), B = dense_from_definition(l, sb);
  double ab = 0, aa = 0;
  for (std::size_t q = 0; q < A.size(); ++q) {
    ab += A[q] * B[q];
    aa += A[q] * A[q];
  }
  const auto dist = Distribution::block_cyclic(grid, 72, 72);
  for (const int threads : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    DistMatrix a = generate_random("A", dist, l, sa), b = generate_random("B", dist, l, sb);
    EXPECT_NEAR(a.dot(b, threads), ab, 1e-13 * aa);
    EXPECT_NEAR(a.dot(a, threads), aa, 1e-13 * aa);

    const Panel copied = Panel::copy_of(a.local().view(), threads);
    EXPECT_TRUE(copied.view().same_index(a.local().view()));
    EXPECT_TRUE(
        std::equal(copied.data().begin(), copied.data().end(), a.local().data().begin(), a.local().data().end()));

    a.add(0.5, -2.0, b, threads);  // two patterns: their union
    std::vector<double> ref(A.size());
    for (std::size_t q = 0; q < A.size(); ++q) ref[q] = 0.5 * A[q] - 2.0 * B[q];
    EXPECT_LE(test::relative_error(a.to_dense(), ref), 1e-15);
    std::int64_t union_blocks = 0;
    for (int i = 0; i < 72; ++i)
      for (int j = 0; j < 72; ++j)
        union_blocks += generator_block_present(sa, i, j) || generator_block_present(sb, i, j) ? 1 : 0;
    EXPECT_EQ(a.global_nblocks(), union_blocks);

    DistMatrix twin = a;  // one pattern: in place, 3 R + 2 (-R) = R
    twin.scale(-1.0);
    const std::int64_t local_blocks = a.local().nblocks();
    a.add(3.0, 2.0, twin, threads);
    EXPECT_LE(test::relative_error(a.to_dense(), ref), 1e-15);
    EXPECT_EQ(a.local().nblocks(), local_blocks);
  }
}

TEST(DistMatrix, FilterDropsSmallBlocksOnly) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(9);
  DistMatrix a = generate_random("A", Distribution::block_cyclic(grid, 9, 9), l, spec(8, 0.6));
  // Block norms over all ranks, then filter at the median norm.
  std::vector<double> norms = a.block_norms();
  int n = static_cast<int>(norms.size()), total = 0;
  MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::vector<int> counts(static_cast<std::size_t>(grid->size())), displs(counts.size(), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (std::size_t q = 1; q < counts.size(); ++q) displs[q] = displs[q - 1] + counts[q - 1];
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(norms.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  const double eps = all[all.size() / 2];
  const auto expect_kept = std::count_if(all.begin(), all.end(), [&](double x) { return x >= eps; });
  const auto before = a.to_dense();
  a.filter(eps);
  EXPECT_EQ(a.global_nblocks(), expect_kept);
  for (double x : a.block_norms()) EXPECT_GE(x, eps);
  // Kept blocks are unchanged: the filtered matrix differs from the original only where it is 0.
  const auto after = a.to_dense();
  for (std::size_t q = 0; q < after.size(); ++q)
    if (after[q] != 0.0) {
      ASSERT_EQ(after[q], before[q]);
    }
}

TEST(DistMatrix, MatrixMarketRoundTripOnAllRanks) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto l = mixed(8);
  DistMatrix a = generate_random("A", Distribution::random_permuted(grid, 8, 8, 3), l, spec(9, 0.5));
  std::string path = "/tmp/plexus_mpi_rt_" + std::to_string(grid->size()) + ".mtx";
  write_matrix_market(a, path);
  DistMatrix b = read_matrix_market(path, "B", Distribution::block_cyclic(grid, 8, 8), l);
  EXPECT_EQ(b.to_dense(), a.to_dense());
  EXPECT_EQ(b.global_nblocks(), a.global_nblocks());
  MPI_Barrier(MPI_COMM_WORLD);
  if (grid->rank() == 0) std::remove(path.c_str());
  // A write into a missing folder fails on every rank, not only on rank 0.
  EXPECT_THROW(write_matrix_market(a, "/nonexistent-dir/x.mtx"), InputError);
}

TEST(Grid, ShapesAndErrors) {
  const int p = [] {
    int s = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
  }();
  auto g = Grid::create(MPI_COMM_WORLD);
  EXPECT_EQ(g->nprows() * g->npcols(), p);
  auto line = Grid::create(MPI_COMM_WORLD, 1, p);
  EXPECT_EQ(line->nprows(), 1);
  EXPECT_THROW(Grid::create(MPI_COMM_WORLD, p + 1, 1), InputError);
}

// The counting layer's local bytes: those of transfers whose peer is the rank itself (counted in
// the volume, as the published models count them, but crossing no network). Each rank sends n1
// values to itself and n2 to the next rank, receives them (the second from MPI_ANY_SOURCE), and
// fetches g1 values from its own part of a window and g2 from the next rank's. On one rank every
// transfer is local.
TEST(Traffic, LocalBytesAreThoseWhosePeerIsThisRank) {
  const int p = mpi::size(MPI_COMM_WORLD), me = mpi::rank(MPI_COMM_WORLD);
  const int next = (me + 1) % p;
  const std::int64_t n1 = 3, n2 = 5, g1 = 7, g2 = 11;
  std::vector<double> out(static_cast<std::size_t>(n1 + n2), 1.0), in(static_cast<std::size_t>(n1 + n2), 0.0);
  std::vector<double> fetched(static_cast<std::size_t>(g1 + g2), 0.0);
  double* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  ASSERT_EQ(MPI_Win_allocate(static_cast<MPI_Aint>(sizeof(double) * (g1 + g2)), sizeof(double), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &base, &win),
            MPI_SUCCESS);
  std::fill(base, base + g1 + g2, static_cast<double>(me));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);

  mpi::Traffic t;
  t.irecv(in.data(), n1, MPI_DOUBLE, me, 1, MPI_COMM_WORLD, mpi::Role::A);
  t.irecv(in.data() + n1, n2, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, mpi::Role::B);
  t.isend(out.data(), n1, MPI_DOUBLE, me, 1, MPI_COMM_WORLD, mpi::Role::A);
  t.isend(out.data() + n1, n2, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, mpi::Role::B);
  t.rget(fetched.data(), g1, MPI_DOUBLE, me, 0, win, mpi::Role::C);
  t.rget(fetched.data() + g1, g2, MPI_DOUBLE, next, g1, win, mpi::Role::C, mpi::Payload::Index);
  t.waitall(mpi::Role::A);
  t.waitall(mpi::Role::B);
  t.waitall(mpi::Role::C);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  EXPECT_EQ(fetched[static_cast<std::size_t>(g1)], static_cast<double>(next));

  const bool alone = p == 1;
  const auto& a = t.counts(mpi::Role::A);
  const auto& b = t.counts(mpi::Role::B);
  const auto& c = t.counts(mpi::Role::C);
  EXPECT_EQ(a.bytes_sent, 8 * n1);
  EXPECT_EQ(a.local_bytes_sent, 8 * n1);
  EXPECT_EQ(a.local_bytes_received, 8 * n1);
  EXPECT_EQ(b.bytes_sent, 8 * n2);
  EXPECT_EQ(b.bytes_received, 8 * n2);
  EXPECT_EQ(b.local_bytes_sent, alone ? 8 * n2 : 0);
  EXPECT_EQ(b.local_bytes_received, alone ? 8 * n2 : 0);  // from MPI_ANY_SOURCE: told by the status
  EXPECT_EQ(c.bytes_received, 8 * g1);
  EXPECT_EQ(c.index_bytes_received, 8 * g2);
  EXPECT_EQ(c.local_bytes_received, 8 * g1 + (alone ? 8 * g2 : 0));
  EXPECT_EQ(c.local_bytes_sent, 0);
}

TEST(Traffic, TestProgressesTransfersAndCountsThemAsWaitallWould) {
  const int p = mpi::size(MPI_COMM_WORLD), me = mpi::rank(MPI_COMM_WORLD);
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  // Large enough for every MPI library's rendezvous protocol: its data moves only inside MPI calls.
  const std::int64_t n = std::int64_t{1} << 20;
  std::vector<double> out(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(n), -1.0);
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = me * 1e7 + static_cast<double>(i);
  mpi::Traffic t;
  EXPECT_TRUE(t.test(mpi::Role::A));  // nothing pending
  t.irecv(in.data(), n, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, mpi::Role::B);
  t.isend(out.data(), n, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, mpi::Role::B);
  std::int64_t polls = 1;
  while (!t.test(mpi::Role::B)) ++polls;  // every rank polls until its own requests are complete
  EXPECT_GE(polls, 1);
  EXPECT_EQ(t.pending(), 0u);
  t.waitall(mpi::Role::B);  // nothing left to wait for
  const auto& b = t.counts(mpi::Role::B);
  EXPECT_EQ(b.bytes_sent, 8 * n);
  EXPECT_EQ(b.bytes_received, 8 * n);
  EXPECT_EQ(b.local_bytes_received, p == 1 ? 8 * n : 0);
  EXPECT_EQ(b.wait_seconds, 0.0);  // completed by test(), never waited for
  EXPECT_EQ(in[0], prev * 1e7);
  EXPECT_EQ(in[static_cast<std::size_t>(n - 1)], prev * 1e7 + static_cast<double>(n - 1));
}
