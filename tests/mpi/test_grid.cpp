// Grids with layers: every shape PR x PC x L of the job's ranks and every layered view of every 2D
// grid, each communicator's size, ranks and members checked against the coordinates every rank
// reports (an allgather), the rank order against the documented formulas, the pool's count of
// communicators and its release, bad shapes, and distributions over a layered grid; and CommWatch,
// which knows a communicator by more than its handle.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plexus/comm_pool.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

using namespace plexus;

namespace {

int world_size() { return mpi::size(MPI_COMM_WORLD); }

struct Coord {
  int prow, pcol, layer;
};

// Every rank's coordinates, indexed by its rank in g.comm(), as the ranks report them.
std::vector<Coord> all_coords(const Grid& g) {
  const int mine[3] = {g.myprow(), g.mypcol(), g.mylayer()};
  std::vector<int> flat(static_cast<std::size_t>(3 * g.size()));
  MPI_Allgather(mine, 3, MPI_INT, flat.data(), 3, MPI_INT, g.comm());
  std::vector<Coord> c;
  for (std::size_t q = 0; q < flat.size(); q += 3) c.push_back({flat[q], flat[q + 1], flat[q + 2]});
  return c;
}

// The members of c, as ranks in `outer`, in c's rank order.
std::vector<int> members(MPI_Comm c, MPI_Comm outer) {
  const int me = mpi::rank(outer);
  std::vector<int> m(static_cast<std::size_t>(mpi::size(c)));
  MPI_Allgather(&me, 1, MPI_INT, m.data(), 1, MPI_INT, c);
  return m;
}

// The ranks q with same(coords[q]), ordered by key(coords[q]).
std::vector<int> expected(const std::vector<Coord>& coords, const std::function<bool(const Coord&)>& same,
                          const std::function<int(const Coord&)>& key) {
  std::vector<int> q;
  for (int r = 0; r < static_cast<int>(coords.size()); ++r)
    if (same(coords[static_cast<std::size_t>(r)])) q.push_back(r);
  std::sort(q.begin(), q.end(), [&](int a, int b) { return key(coords[a]) < key(coords[b]); });
  return q;
}

// Coordinates form the whole PR x PC x L box once each, rank_of inverts them, and the plane,
// fibre, row and column communicators hold exactly the ranks they should, in order.
void check_communicators(const Grid& g) {
  const int PR = g.nprows(), PC = g.npcols(), L = g.nlayers();
  ASSERT_EQ(g.size(), mpi::size(g.comm()));
  ASSERT_EQ(g.rank(), mpi::rank(g.comm()));
  const auto coords = all_coords(g);
  std::vector<int> seen(static_cast<std::size_t>(g.size()), 0);
  for (int q = 0; q < g.size(); ++q) {
    const Coord& c = coords[static_cast<std::size_t>(q)];
    ASSERT_TRUE(c.prow >= 0 && c.prow < PR && c.pcol >= 0 && c.pcol < PC && c.layer >= 0 && c.layer < L);
    EXPECT_EQ(g.rank_of(c.prow, c.pcol, c.layer), q);
    ++seen[static_cast<std::size_t>((c.layer * PR + c.prow) * PC + c.pcol)];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), g.size()) << "every coordinate exactly once";
  const Coord me = coords[static_cast<std::size_t>(g.rank())];
  auto in_plane = [PC](const Coord& c) { return c.prow * PC + c.pcol; };
  auto layer = [](const Coord& c) { return c.layer; };
  auto prow = [](const Coord& c) { return c.prow; };
  auto pcol = [](const Coord& c) { return c.pcol; };
  auto same_layer = [&](const Coord& c) { return c.layer == me.layer; };
  auto same_place = [&](const Coord& c) { return in_plane(c) == in_plane(me); };
  auto same_row = [&](const Coord& c) { return same_layer(c) && c.prow == me.prow; };
  auto same_col = [&](const Coord& c) { return same_layer(c) && c.pcol == me.pcol; };
  EXPECT_EQ(members(g.plane_comm(), g.comm()), expected(coords, same_layer, in_plane));
  EXPECT_EQ(members(g.fibre_comm(), g.comm()), expected(coords, same_place, layer));
  EXPECT_EQ(members(g.row_comm(), g.comm()), expected(coords, same_row, pcol));
  EXPECT_EQ(members(g.col_comm(), g.comm()), expected(coords, same_col, prow));
  if (L == 1) {
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(g.plane_comm(), g.comm(), &same);
    EXPECT_EQ(same, MPI_IDENT) << "a 2D grid's plane is its communicator";
  }
}

// Every (PR, PC, L) with PR * PC * L = p.
std::vector<std::vector<int>> shapes3(int p) {
  std::vector<std::vector<int>> s;
  for (int L = 1; L <= p; ++L)
    for (int PR = 1; PR <= p; ++PR)
      if (p % (L * PR) == 0) s.push_back({p / (L * PR), PR, L});
  return s;
}

// True when s is the same string on every rank of comm (compared by length and hash).
bool same_everywhere(const std::string& s, MPI_Comm comm) {
  const auto h = static_cast<std::uint64_t>(std::hash<std::string>{}(s)) ^ s.size();
  std::uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  return lo == hi;
}

// Runs f, which must throw InputError on every rank with the same message, and no communicator
// may have been made in `pool`.
void expect_input_error(CommPool& pool, const std::function<void()>& f) {
  const std::size_t before = pool.size();
  std::string what;
  try {
    f();
  } catch (const InputError& e) {
    what = e.what();
  }
  EXPECT_FALSE(what.empty()) << "no InputError";
  EXPECT_TRUE(same_everywhere(what, MPI_COMM_WORLD)) << what;
  EXPECT_EQ(pool.size(), before) << "no communicator made before the error";
}

}  // namespace

TEST(Grid3D, EveryShapeOfTheJobFromAPool) {
  const int p = world_size();
  CommPool pool;
  for (const auto& s : shapes3(p)) {
    const int PR = s[0], PC = s[1], L = s[2];
    SCOPED_TRACE("grid " + std::to_string(PR) + "x" + std::to_string(PC) + "x" + std::to_string(L));
    const std::size_t before = pool.size();
    auto g = Grid::create(pool, MPI_COMM_WORLD, PR, PC, L);
    ASSERT_EQ(g->nprows(), PR);
    ASSERT_EQ(g->npcols(), PC);
    ASSERT_EQ(g->nlayers(), L);
    // The documented order: rank = (layer * PR + prow) * PC + pcol.
    const int r = mpi::rank(MPI_COMM_WORLD);
    EXPECT_EQ(g->mylayer(), r / (PR * PC));
    EXPECT_EQ(g->myprow(), r % (PR * PC) / PC);
    EXPECT_EQ(g->mypcol(), r % PC);
    check_communicators(*g);
    // A dup, rows and columns; with layers also planes and fibres.
    EXPECT_EQ(pool.size(), before + (L > 1 ? 5 : 3));
    auto again = Grid::create(pool, MPI_COMM_WORLD, PR, PC, L);
    EXPECT_EQ(pool.size(), before + (L > 1 ? 5 : 3)) << "made once per shape";
    EXPECT_EQ(again->fibre_comm(), g->fibre_comm());
  }
  pool.release();
  EXPECT_EQ(pool.size(), 0u);
}

TEST(Grid3D, OwningGridsAndAutomaticPlanes) {
  const int p = world_size();
  for (int L = 1; L <= p; ++L) {
    if (p % L != 0) continue;
    SCOPED_TRACE("L=" + std::to_string(L));
    auto g = Grid::create(MPI_COMM_WORLD, 0, 0, L);
    int dims[2] = {0, 0};
    MPI_Dims_create(p / L, 2, dims);
    EXPECT_EQ(g->nprows(), dims[0]);
    EXPECT_EQ(g->npcols(), dims[1]);
    EXPECT_EQ(g->nlayers(), L);
    check_communicators(*g);
  }
}

TEST(Grid3D, BadShapesFailOnEveryRankBeforeAnyCommunicator) {
  const int p = world_size();
  CommPool pool;
  expect_input_error(pool, [&] { Grid::create(pool, MPI_COMM_WORLD, p, 1, 2); });
  expect_input_error(pool, [&] { Grid::create(pool, MPI_COMM_WORLD, 1, 1, 0); });
  expect_input_error(pool, [&] { Grid::create(pool, MPI_COMM_WORLD, 0, 0, p + 1); });
  expect_input_error(pool, [&] { Grid::create(pool, MPI_COMM_WORLD, p + 1, 0, 1); });
  expect_input_error(pool, [&] { Grid::create(pool, MPI_COMM_WORLD, 1, p, 3); });
  auto g = Grid::create(pool, MPI_COMM_WORLD);
  expect_input_error(pool, [&] { g->reshaped(p + 1, 1); });
  expect_input_error(pool, [&] { g->reshaped(0, p); });
  expect_input_error(pool, [&] { g->layered(g->nprows() + 1, 1); });
  expect_input_error(pool, [&] { g->layered(1, g->npcols() + 1); });
  expect_input_error(pool, [&] { g->layered(0, 1); });
  expect_input_error(pool, [&] { g->layered(1, -2); });
  if (p > 1) {
    auto g3 = Grid::create(pool, MPI_COMM_WORLD, 1, 1, p);
    expect_input_error(pool, [&] { g3->layered(1, 1); });  // a grid with layers has no layered view
  }
  pool.release();
}

namespace {

// Every (sr, sc) dividing (PR, PC), but 1 x 1.
std::vector<std::pair<int, int>> group_shapes(int PR, int PC) {
  std::vector<std::pair<int, int>> v;
  for (int sr = 1; sr <= PR; ++sr)
    for (int sc = 1; sc <= PC; ++sc)
      if (PR % sr == 0 && PC % sc == 0 && sr * sc > 1) v.emplace_back(sr, sc);
  return v;
}

// The view against its 2D grid: rma25d's group is the fibre (colour (r0/sr)*(PC/sc) + c0/sc,
// member index (pr%sr)*sc + pc%sc, member q with rank q), the plane is the ranks with my member
// index, and every communicator holds what its coordinates say.
void check_view(const Grid& g2, const Grid& v, int sr, int sc) {
  const int PR = g2.nprows(), PC = g2.npcols();
  ASSERT_EQ(v.nprows(), PR / sr);
  ASSERT_EQ(v.npcols(), PC / sc);
  ASSERT_EQ(v.nlayers(), sr * sc);
  EXPECT_EQ(v.group_rows(), sr);
  EXPECT_EQ(v.group_cols(), sc);
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(v.comm(), g2.comm(), &same);
  EXPECT_EQ(same, MPI_IDENT) << "a view is over the ranks of its grid";
  const auto c2 = all_coords(g2);
  auto color = [&](const Coord& c) { return (c.prow / sr) * (PC / sc) + c.pcol / sc; };
  auto member = [&](const Coord& c) { return (c.prow % sr) * sc + c.pcol % sc; };
  const Coord me = c2[static_cast<std::size_t>(g2.rank())];
  EXPECT_EQ(v.myprow(), me.prow / sr);
  EXPECT_EQ(v.mypcol(), me.pcol / sc);
  EXPECT_EQ(v.mylayer(), member(me));
  auto same_group = [&](const Coord& c) { return color(c) == color(me); };
  auto same_member = [&](const Coord& c) { return member(c) == member(me); };
  EXPECT_EQ(members(v.fibre_comm(), g2.comm()), expected(c2, same_group, member));
  EXPECT_EQ(members(v.plane_comm(), g2.comm()), expected(c2, same_member, color));
  check_communicators(v);
}

}  // namespace

TEST(LayeredView, EveryGroupShapeOfEvery2DGrid) {
  const int p = world_size();
  CommPool pool;
  for (int PR = 1; PR <= p; ++PR) {
    if (p % PR != 0) continue;
    auto g = Grid::create(pool, MPI_COMM_WORLD, PR, p / PR);
    EXPECT_EQ(g->layered(1, 1).get(), g.get()) << "1x1 groups: the grid itself";
    for (const auto& [sr, sc] : group_shapes(PR, p / PR)) {
      SCOPED_TRACE("grid " + g->describe() + ", groups " + std::to_string(sr) + "x" + std::to_string(sc));
      const std::size_t before = pool.size();
      auto v = g->layered(sr, sc);
      check_view(*g, *v, sr, sc);
      EXPECT_EQ(pool.size(), before + 4) << "planes, fibres, rows and columns of the view, from the grid's pool";
      auto again = g->layered(sr, sc);
      EXPECT_EQ(pool.size(), before + 4) << "made once per shape";
      EXPECT_EQ(again->fibre_comm(), v->fibre_comm());
    }
  }
  pool.release();
  EXPECT_EQ(pool.size(), 0u) << "the pool's release frees the views' communicators";
}

TEST(LayeredView, OfAnOwningGridKeepsTheGridAlive) {
  const int p = world_size();
  auto g = Grid::create(MPI_COMM_WORLD, 1, p);
  auto v = g->layered(1, p);  // one group of p members: rma25d's 1 x p grid with L = p
  g.reset();
  EXPECT_EQ(v->nlayers(), p);
  double x = 1.0;
  MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, v->fibre_comm());
  EXPECT_EQ(x, p);
  EXPECT_EQ(mpi::rank(v->fibre_comm()), mpi::rank(MPI_COMM_WORLD));
}

namespace {

GeneratorSpec occupied(std::uint64_t seed) {
  GeneratorSpec s;
  s.seed = seed;
  s.occupancy = 0.6;
  return s;
}

}  // namespace

TEST(LayeredDistribution, BlocksLiveOnLayerZeroWithThePlanesMaps) {
  const int p = world_size();
  const int nb = 11;
  const BlockLayout layout{BlockSizes::cyclic(nb, {2, 3, 5}), BlockSizes::cyclic(nb, {4, 1})};
  auto flat = Distribution::block_cyclic(Grid::create(MPI_COMM_WORLD), nb, nb);
  const DistMatrix ref = generate_random("ref", flat, layout, occupied(5));
  const auto dense = ref.to_dense();
  for (int L = 1; L <= p; ++L) {
    if (p % L != 0) continue;
    SCOPED_TRACE("L=" + std::to_string(L));
    auto g = Grid::create(MPI_COMM_WORLD, 0, 0, L);
    for (const auto& d : {Distribution::block_cyclic(g, nb, nb), Distribution::random_permuted(g, nb, nb, 9)}) {
      for (int i = 0; i < nb; ++i)
        for (int j = 0; j < nb; ++j) EXPECT_EQ(d->owner(i, j), g->rank_of(d->row_dist()[i], d->col_dist()[j], 0));
      if (g->mylayer() != 0) {
        EXPECT_TRUE(d->local_rows().empty());
        EXPECT_TRUE(d->local_cols().empty());
      }
      const DistMatrix m = generate_random("m", d, layout, occupied(5));
      if (g->mylayer() != 0) {
        EXPECT_EQ(m.local().nblocks(), 0);
      }
      // A panel of the local rows without blocks (a multiply's C from nothing): the rows of the
      // matrix's panel, made once.
      const PanelView none = d->empty_local_view();
      const PanelView mine = m.local().view();
      ASSERT_EQ(none.nrows, static_cast<int>(d->local_rows().size()));
      ASSERT_EQ(none.nrows, mine.nrows);
      EXPECT_EQ(none.nblocks, 0);
      EXPECT_EQ(none.data_size, 0);
      EXPECT_EQ(none.row_ptr[0], 0);
      for (int r = 0; r < none.nrows; ++r) {
        EXPECT_EQ(none.row_ids[r], mine.row_ids[r]);
        EXPECT_EQ(none.row_ptr[r + 1], 0);
      }
      EXPECT_NE(none.held_index(), nullptr);
      EXPECT_EQ(d->empty_local_view().index, none.index);
      EXPECT_EQ(m.to_dense(), dense) << "the same matrix as on the 2D grid, stored once";
      EXPECT_NEAR(m.frobenius_norm(), ref.frobenius_norm(), 1e-12 * ref.frobenius_norm());
      EXPECT_EQ(m.redistribute(flat).to_dense(), dense);
      EXPECT_EQ(ref.redistribute(d).to_dense(), dense);
    }
  }
}

TEST(LayeredDistribution, EqualMapsOnGridsThatPlaceBlocksApartAreNotAligned) {
  // A 2 x 2 x (p/4) mesh and the 2D grid's layered view of the same shape have equal maps but put
  // a block on different ranks: add and dot must redistribute, not pair the blocks they hold.
  const int p = world_size();
  if (p != 8 && p != 16) GTEST_SKIP() << "needs 8 or 16 ranks";
  CommPool pool;
  {
    auto mesh = Grid::create(pool, MPI_COMM_WORLD, 2, 2, p / 4);
    auto view = Grid::create(pool, MPI_COMM_WORLD, p == 8 ? 2 : 4, 4)->layered(p == 8 ? 1 : 2, 2);
    ASSERT_EQ(view->nprows(), 2);
    ASSERT_EQ(view->npcols(), 2);
    ASSERT_EQ(view->nlayers(), p / 4);
    EXPECT_FALSE(mesh->same_placement(*view));
    EXPECT_TRUE(mesh->same_placement(*mesh));
    const int nb = 9;
    const BlockLayout layout{BlockSizes::cyclic(nb, {2, 3}), BlockSizes::cyclic(nb, {3, 1})};
    auto dm = Distribution::block_cyclic(mesh, nb, nb), dv = Distribution::block_cyclic(view, nb, nb);
    EXPECT_EQ(dm->row_dist(), dv->row_dist());
    EXPECT_FALSE(dm->same_maps(*dv));
    DistMatrix x = generate_random("x", dm, layout, occupied(11));
    const DistMatrix y = generate_random("y", dv, layout, occupied(12));
    std::vector<double> expect = x.to_dense();
    const std::vector<double> yd = y.to_dense();
    for (std::size_t i = 0; i < expect.size(); ++i) expect[i] += 2.0 * yd[i];
    x.add(1.0, 2.0, y);
    const std::vector<double> got = x.to_dense();
    ASSERT_EQ(got.size(), expect.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expect[i], 1e-12) << i;
  }
  pool.release();
}

// CommWatch knows a communicator as an object: it holds for the watched one while it lives, for no
// other, and never again once that one is freed, even for the same handle value (MPI may hand it
// out again to a new communicator, on some ranks only). Two watches of one communicator are
// independent, and forget() ends a watch without freeing anything.
TEST(CommWatch, HoldsForTheWatchedCommunicatorUntilItIsFreed) {
  MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_dup(MPI_COMM_WORLD, &b);
  plexus::mpi::CommWatch w, v;
  EXPECT_FALSE(w.is(a));
  EXPECT_FALSE(w.is(MPI_COMM_NULL));
  w.watch(a);
  v.watch(a);
  EXPECT_TRUE(w.is(a));
  EXPECT_FALSE(w.is(b));
  v.forget();
  EXPECT_FALSE(v.is(a));
  EXPECT_TRUE(w.is(a)) << "forgetting one watch leaves the other";
  const MPI_Comm freed = a;
  MPI_Comm_free(&a);
  EXPECT_FALSE(w.is(freed)) << "the freed communicator's handle no longer counts";
  w.watch(b);
  EXPECT_TRUE(w.is(b));
  // A new communicator, whatever handle it gets (the freed one's again, here or not), is not b.
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  EXPECT_FALSE(w.is(c));
  EXPECT_FALSE(v.is(c));
  const MPI_Comm b_freed = b;
  MPI_Comm_free(&b);
  EXPECT_FALSE(w.is(b_freed));
  MPI_Comm_free(&c);
}
