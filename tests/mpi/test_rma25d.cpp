// The 2.5D one-sided multiply: correctness for every valid layer count on every rank count and
// grid orientation (against the dense product and against Cannon), the communicated volume
// against Equation (7) of the PASC'17 paper (dense) and against the schedule recomputed from the
// global block lists (sparse), the buffer memory against the model, and window reuse.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "multiply_fixtures.hpp"

using namespace plexus;
using namespace plexus::test;

namespace {

// The paper's rule, written out here independently of the plugin.
std::vector<int> valid_layers(int PR, int PC) {
  std::vector<int> v{1};
  if (PR == PC) {
    for (int s = 2; s <= PR; ++s)
      if (PR % s == 0) v.push_back(s * s);
  } else {
    const int mn = std::min(PR, PC), mx = std::max(PR, PC);
    if (mx % mn == 0 && mx <= mn * mn) v.push_back(mx / mn);
  }
  return v;
}

std::unique_ptr<CommStrategy> rma(int layers, bool strict = true) {
  return strategy("rma25d", {"Layers=" + std::to_string(layers), std::string("StrictLayers=") + (strict ? "true" : "false")});
}

double rel(const std::vector<double>& x, const std::vector<double>& y) { return relative_error(x, y); }

void check_case(const Case& k) {
  for (const auto& grid : grids()) {
    for (int L : valid_layers(grid->nprows(), grid->npcols())) {
      SCOPED_TRACE(k.name + " on grid " + grid->describe() + " with L=" + std::to_string(L));
      Operands o = make_operands(k, grid);
      const std::vector<double> ref = expected_c(k, o);
      Operands oc = make_operands(k, grid);
      auto r = rma(L);
      auto c = strategy("cannon");
      auto kern = kernel(k.kernel);
      MultiplyReport rep;
      for (int q = 0; q < k.repeat; ++q) {
        rep = r->multiply(k.alpha, o.a, o.b, k.beta, o.c, *kern, MultiplyOptions{k.filter_eps});
        c->multiply(k.alpha, oc.a, oc.b, k.beta, oc.c, *kern, MultiplyOptions{k.filter_eps});
      }
      const auto got = o.c.to_dense();
      EXPECT_LE(rel(got, ref), 1e-12);
      EXPECT_LE(rel(got, oc.c.to_dense()), 1e-12) << "differs from Cannon";
      EXPECT_EQ(rep.extra.at("layers"), L);
    }
  }
}

}  // namespace

TEST(Rma25d, MixedBlocksAlphaBetaEveryValidL) {
  check_case({"mixed", 11, 13, 9, {1, 5, 13, 23, 32}, 0.35, -0.75, 1.5, "random", "cpu"});
}

TEST(Rma25d, InvalidLayersFallBackToOneOrFailWhenStrict) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto valid = valid_layers(grid->nprows(), grid->npcols());
  ASSERT_EQ(std::count(valid.begin(), valid.end(), 3), 0);  // 3 is valid on none of the tested grids
  Case k{"fallback", 8, 8, 8, {3}, 0.5, 1.0, 0.0, "block-cyclic", "cpu"};
  Operands o = make_operands(k, grid);
  auto kern = kernel("cpu");
  EXPECT_THROW(rma(3, true)->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{}), InputError);
  const auto ref = expected_c(k, o);
  const MultiplyReport rep = rma(3, false)->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
  EXPECT_EQ(rep.extra.at("layers"), 1);
  EXPECT_LE(rel(o.c.to_dense(), ref), 1e-12);
}

namespace {
// The grids for the byte-exact check of Equation (7): 4 ranks 2x2 (L=1), 8 ranks 2x4
// (L=2), 16 ranks 4x4 (L=4), 9 ranks 3x3 (L=9).
bool equation7_grid(int p, int& PR, int& PC, int& L) {
  switch (p) {
    case 4: PR = 2, PC = 2, L = 1; return true;
    case 8: PR = 2, PC = 4, L = 2; return true;
    case 16: PR = 4, PC = 4, L = 4; return true;
    case 9: PR = 3, PC = 3, L = 9; return true;
    default: return false;
  }
}
}  // namespace

TEST(Rma25d, DenseVolumeIsEquation7ToTheByte) {
  int p = 0, PR = 0, PC = 0, L = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (!equation7_grid(p, PR, PC, L)) GTEST_SKIP() << "Equation (7) is checked on 4, 8, 9 and 16 ranks";
  auto grid = Grid::create(MPI_COMM_WORLD, PR, PC);
  const int nb = 36, bs = 4;  // 36 blocks: every k-group gets the same number of block columns
  Case k{"dense", nb, nb, nb, {bs}, 1.0, 1.0, 0.0, "block-cyclic", "reference"};
  Operands o = make_operands(k, grid);
  auto kern = kernel("reference");
  for (int layers : {1, L}) {
    SCOPED_TRACE("grid " + grid->describe() + " L=" + std::to_string(layers));
    auto r = rma(layers);
    const MultiplyReport rep = r->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
    const std::int64_t SA = std::int64_t{nb / PR * bs} * (nb / PC * bs) * 8;  // local panel bytes
    const std::int64_t SB = SA, SC = SA;
    const int V = std::lcm(PR, PC);
    const std::int64_t fetched = rep.traffic[0].bytes_received + rep.traffic[1].bytes_received;
    const std::int64_t c_sent = rep.traffic[2].bytes_sent;
    std::int64_t expect_ab = 0;
    if (PR == PC) {
      const int s = static_cast<int>(std::lround(std::sqrt(layers)));
      ASSERT_EQ(V % s, 0);
      expect_ab = V / s * (SA + SB);  // V/sqrt(L) * (S_A + S_B)
    } else if (layers == 1) {
      // Non-square, L = 1: V ticks, each one A panel of S_A*PC/V and one B panel of S_B*PR/V.
      expect_ab = std::int64_t{PC} * SA + std::int64_t{PR} * SB;
    } else {
      // Non-square, L = max/min: V/L ticks of one A panel (S_A) and L B panels (S_B/L each).
      expect_ab = V / layers * (SA + SB);
    }
    EXPECT_EQ(fetched, expect_ab);
    EXPECT_EQ(c_sent, (layers - 1) * SC);
    EXPECT_EQ(rep.traffic[2].bytes_received, (layers - 1) * SC);
    EXPECT_EQ(fetched + c_sent, static_cast<std::int64_t>(rep.extra.at("predicted_bytes_received")));
    EXPECT_EQ(rep.extra.at("predicted_buffer_bytes"), rep.extra.at("measured_buffer_bytes"));
    // The dry-run model (no data, no MPI) predicts the same figures from the panel sizes.
    const auto m = r->model(ModelSpec{PR, PC, SA, SB, SC}, grid->myprow(), grid->mypcol());
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->bytes_a, rep.traffic[0].bytes_received);
    EXPECT_EQ(m->bytes_b, rep.traffic[1].bytes_received);
    EXPECT_EQ(m->bytes_c, c_sent);
    EXPECT_EQ(m->ticks, rep.ticks);
    EXPECT_EQ(m->buffer_bytes, static_cast<std::int64_t>(rep.extra.at("predicted_buffer_values_bytes")));
  }
}

TEST(Rma25d, BufferFootprintFollowsEquation6OnSquareGrids) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p != 16 && p != 4) GTEST_SKIP() << "checked on the 2x2 and 4x4 grids";
  auto grid = Grid::create(MPI_COMM_WORLD, p == 16 ? 4 : 2, p == 16 ? 4 : 2);
  const int L = 4, nb = 24, bs = 4;
  Case k{"dense", nb, nb, nb, {bs}, 1.0, 1.0, 0.0, "block-cyclic", "reference"};
  Operands o = make_operands(k, grid);
  auto kern = kernel("reference");
  const MultiplyReport one = rma(1)->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
  const MultiplyReport four = rma(L)->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
  const double S = double(nb / grid->nprows() * bs) * (nb / grid->npcols() * bs) * 8;  // S_A = S_B = S_C
  // Equation (6), square grid: S_C/(3(S_A+S_B)) * L + (sqrt(L)+4)/6, on the values of the buffers.
  // Exact when L divides V (4x4): every fetched panel is a whole local panel. On 2x2, L = 4 cuts k
  // into G = lcm(V, L) = 2V groups, the fetched panels are half panels, and the footprint is lower.
  const double ratio = four.extra.at("predicted_buffer_values_bytes") / one.extra.at("predicted_buffer_values_bytes");
  const double eq6 = S / (3 * (S + S)) * L + (std::sqrt(double(L)) + 4) / 6;
  if (std::lcm(grid->nprows(), grid->npcols()) % L == 0) {
    EXPECT_NEAR(ratio, eq6, 1e-12);
  } else {
    EXPECT_LT(ratio, eq6);
    EXPECT_NEAR(ratio, (L * S + 2 * S + 2 * S / 2 + 2 * S / 2) / (6 * S), 1e-12);  // windows, 2 A, 2 B half panels
  }
  EXPECT_EQ(one.extra.at("predicted_buffer_values_bytes"), 3 * (S + S));  // 6 buffers at L = 1
  EXPECT_EQ(four.extra.at("predicted_buffer_bytes"), four.extra.at("measured_buffer_bytes"));
  EXPECT_EQ(one.extra.at("predicted_buffer_bytes"), one.extra.at("measured_buffer_bytes"));
}

TEST(Rma25d, SparseVolumeEqualsTheScheduleOnRealPanels) {
  for (const auto& grid : grids()) {
    for (int L : valid_layers(grid->nprows(), grid->npcols())) {
      SCOPED_TRACE("grid " + grid->describe() + " L=" + std::to_string(L));
      const int nb = 18;
      Case k{"sparse", nb, nb, nb, {2, 5}, 0.3, 1.0, 0.0, "random", "reference"};
      Operands o = make_operands(k, grid);
      auto kern = kernel("reference");
      const MultiplyReport rep = rma(L)->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
      // The schedule as documented: groups of sr x sc, G = lcm(V, L) k-groups (k keeps its A
      // process column), member ell takes g = ell + L*((t + shift) mod T).
      const int PR = grid->nprows(), PC = grid->npcols(), pr = grid->myprow(), pc = grid->mypcol();
      int sr = 1, sc = 1;
      if (L > 1) {
        if (PR == PC) sr = sc = static_cast<int>(std::lround(std::sqrt(L)));
        else if (PC > PR) sc = L;
        else sr = L;
      }
      const int V = std::lcm(PR, PC), G = std::lcm(V, L), T = G / L;
      const int r0 = pr - pr % sr, c0 = pc - pc % sc, ell = (pr % sr) * sc + (pc % sc), shift = (pr + pc) % T;
      const auto& cA = o.a.distribution().col_dist();
      const auto& rA = o.a.distribution().row_dist();
      const auto& cB = o.b.distribution().col_dist();
      std::vector<int> kg(cA.size()), seen(static_cast<std::size_t>(PC), 0);
      for (std::size_t q = 0; q < cA.size(); ++q) kg[q] = cA[q] + PC * (seen[static_cast<std::size_t>(cA[q])]++ % (G / PC));
      auto A = blocks_of(o.a), B = blocks_of(o.b);
      std::set<int> mine;
      std::int64_t fetched = 0;
      for (int t = 0; t < T; ++t) {
        const int g = ell + L * ((t + shift) % T);
        mine.insert(g);
        for (const auto& [ik, v] : A)
          if (kg[static_cast<std::size_t>(ik.second)] == g && rA[static_cast<std::size_t>(ik.first)] >= r0 &&
              rA[static_cast<std::size_t>(ik.first)] < r0 + sr)
            fetched += static_cast<std::int64_t>(v.size()) * 8;
        for (const auto& [kj, v] : B)
          if (kg[static_cast<std::size_t>(kj.first)] == g && cB[static_cast<std::size_t>(kj.second)] >= c0 &&
              cB[static_cast<std::size_t>(kj.second)] < c0 + sc)
            fetched += static_cast<std::int64_t>(v.size()) * 8;
      }
      // Partial C panels: blocks (i, j) of the group's panels reached through my k-groups.
      std::set<std::pair<int, int>> partial;
      for (const auto& [ik, av] : A) {
        if (!mine.count(kg[static_cast<std::size_t>(ik.second)])) continue;
        const int r = rA[static_cast<std::size_t>(ik.first)];
        if (r < r0 || r >= r0 + sr) continue;
        for (const auto& [kj, bv] : B)
          if (kj.first == ik.second && cB[static_cast<std::size_t>(kj.second)] >= c0 &&
              cB[static_cast<std::size_t>(kj.second)] < c0 + sc)
            partial.insert({ik.first, kj.second});
      }
      std::int64_t c_sent = 0;
      for (const auto& [i, j] : partial)
        if (rA[static_cast<std::size_t>(i)] != pr || cB[static_cast<std::size_t>(j)] != pc)
          c_sent += std::int64_t{o.a.layout().rows.size(i)} * o.b.layout().cols.size(j) * 8;
      EXPECT_EQ(rep.traffic[0].bytes_received + rep.traffic[1].bytes_received, fetched);
      EXPECT_EQ(rep.traffic[2].bytes_sent, c_sent);
    }
  }
}

TEST(Rma25d, WindowsAreCreatedOnceFor20Multiplies) {
  auto grid = Grid::create(MPI_COMM_WORLD);
  const auto valid = valid_layers(grid->nprows(), grid->npcols());
  auto r = rma(valid.back());
  auto kern = kernel("cpu");
  Case k{"reuse", 10, 10, 10, {3, 4}, 0.4, 1.0, 0.0, "random", "cpu"};
  Operands o = make_operands(k, grid);
  const auto ref = expected_c(k, o);
  MultiplyReport rep;
  for (int q = 0; q < 20; ++q) {
    rep = r->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
    ASSERT_LE(rel(o.c.to_dense(), ref), 1e-12) << "multiply " << q;
  }
  EXPECT_EQ(rep.extra.at("window_creations"), 1);
  // A larger problem outgrows the windows: they are created once more, then reused again.
  Case big{"bigger", 16, 16, 16, {3, 4}, 0.6, 1.0, 0.0, "random", "cpu"};
  Operands ob = make_operands(big, grid);
  const auto refb = expected_c(big, ob);
  for (int q = 0; q < 3; ++q) rep = r->multiply(1.0, ob.a, ob.b, 0.0, ob.c, *kern, MultiplyOptions{});
  EXPECT_LE(rel(ob.c.to_dense(), refb), 1e-12);
  EXPECT_EQ(rep.extra.at("window_creations"), 2);
}

// The groups are the fibres of the grid's layered view: their communicators come from the pool
// the grid was made from (four per layer count, none for L = 1), made once however many
// multiplies run, and freed by the pool's release(); the strategy frees nothing. After a release
// MPI may hand out the same handles again: a new grid from the same pool still multiplies right.
TEST(Rma25d, GroupCommunicatorsComeFromTheGridsPool) {
  CommPool pool;
  auto kern = kernel("cpu");
  Case k{"pooled", 9, 10, 8, {2, 3}, 0.5, 1.0, 0.5, "random", "cpu"};
  std::map<int, std::unique_ptr<CommStrategy>> strategies;  // kept across rounds, with their windows
  for (int round = 0; round < 2; ++round) {
    auto grid = Grid::create(pool, MPI_COMM_WORLD);
    ASSERT_EQ(pool.size(), 3u) << "the grid's communicator, rows and columns";
    std::size_t expect = pool.size();
    for (int L : valid_layers(grid->nprows(), grid->npcols())) {
      SCOPED_TRACE("round " + std::to_string(round) + " grid " + grid->describe() + " L=" + std::to_string(L));
      Operands o = make_operands(k, grid);
      const auto ref = expected_c(k, o);
      auto& r = strategies[L];
      if (!r) r = rma(L);
      for (int q = 0; q < 3; ++q) r->multiply(1.0, o.a, o.b, 0.5, o.c, *kern, MultiplyOptions{});
      expect += L > 1 ? 4 : 0;  // the view's planes, fibres, rows and columns
      EXPECT_EQ(pool.size(), expect);
      Operands once = make_operands(k, grid);
      r->multiply(1.0, once.a, once.b, 0.5, once.c, *kern, MultiplyOptions{});
      EXPECT_LE(rel(once.c.to_dense(), ref), 1e-12);
    }
    pool.release();
    EXPECT_EQ(pool.size(), 0u);
  }
}
