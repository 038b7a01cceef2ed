// comm_nboverlap's SymmSquareCube (Huang and Chow, Algorithms 3, 4, 5 and the 2.5D Algorithm 6):
// D^2 and D^3 of a symmetric D against the dense products, for every Variant, NDup = 1..6 (parts
// that do not divide the panels), Replication 1..3, block-sparse and dense D, filtering on
// (against the same algorithm's two plain multiplies, the unfused definition) and off, operands
// on the plane (distribution_for) or elsewhere (moved in and out), all ranks active (1, 8, 27) or
// some idle (2, 4, 9, 16), and ActiveRanks below the rank count. The multiply's counted volume
// against its dry-run model and the published totals, and its alpha-beta terms against the
// paper's formulas. The multiplies themselves (3D and 2.5D) run the multiply conformance suite.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "dense_reference.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/multiply.hpp"
#include "plexus/registry.hpp"

using namespace plexus;

namespace {

struct Setting {
  std::string variant;
  int ndup;
  int active = 0;
  int replication = 0;
};

std::unique_ptr<CommStrategy> nboverlap(const Setting& s) {
  test::load_plugins();
  static const bool loaded = (Registry::global().load_file(PLEXUS_NBOVERLAP_PATH), true);
  (void)loaded;
  return test::strategy("nboverlap",
                        {"Variant=" + s.variant, "NDup=" + std::to_string(s.ndup), "MinPartBytes=0",
                         "ActiveRanks=" + std::to_string(s.active), "Replication=" + std::to_string(s.replication)});
}

int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// The mesh the plugin documents: 3D, the largest p with p^3 <= P; 2.5D with Replication c, the
// largest c' <= c with c'^3 <= P, then the largest q with q^2 c' <= P.
struct Shape {
  int q, c;
};
Shape expected_shape(int P, int replication) {
  int q = 1;
  if (replication == 0) {
    while ((q + 1) * (q + 1) * (q + 1) <= P) ++q;
    return {q, q};
  }
  int c = replication;
  while (c > 1 && c * c * c > P) --c;
  while ((q + 1) * (q + 1) * c <= P) ++q;
  return {q, c};
}

// A symmetric D on `dist`: (X + X^T) / 2 of a generated X (exactly symmetric, symmetric pattern).
DistMatrix symmetric(std::shared_ptr<const Distribution> dist, int nb, const std::vector<int>& sizes, double occ) {
  GeneratorSpec g;
  g.occupancy = occ;
  g.seed = 4242;
  const BlockLayout l{BlockSizes::cyclic(nb, sizes), BlockSizes::cyclic(nb, sizes)};
  DistMatrix x = generate_random("X", dist, l, g);
  DistMatrix xt = transpose(x).redistribute(dist);
  x.add(0.5, 0.5, xt);
  return x;
}

std::vector<double> dense_product(const std::vector<double>& a, const std::vector<double>& b, std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(n * n), 0.0);
  test::dense_gemm(n, n, n, 1.0, a, b, 0.0, c);
  return c;
}

void check(const Setting& s, bool on_plane, double occ, double eps) {
  const int nb = 11;
  const std::vector<int> sizes{3, 5, 2};
  auto algo = nboverlap(s);
  auto kern = test::kernel("cpu");
  auto grid = Grid::create(MPI_COMM_WORLD);
  auto proposal = Distribution::block_cyclic(grid, nb, nb);
  auto dist = on_plane ? algo->distribution_for(proposal) : proposal;
  SCOPED_TRACE("variant " + s.variant + ", NDup " + std::to_string(s.ndup) + ", active " + std::to_string(s.active) +
               ", Replication " + std::to_string(s.replication) + (on_plane ? ", on the plane" : ", moved") +
               ", occupancy " + std::to_string(occ) + ", eps " + std::to_string(eps));
  DistMatrix d = symmetric(dist, nb, sizes, occ);
  DistMatrix d2("D2", dist, d.layout()), d3("D3", dist, d.layout());
  std::vector<MultiplyReport> reports;
  ASSERT_TRUE(algo->square_and_cube(*kern, d, d2, d3, MultiplyOptions{eps, false}, reports));
  ASSERT_EQ(reports.size(), 2u);
  if (s.active == 0) {
    const Shape shape = expected_shape(world_size(), s.replication);
    EXPECT_EQ(reports[0].extra.at("mesh_side"), shape.q);
    EXPECT_EQ(reports[0].extra.at("layers"), shape.c);
  }
  double flops = reports[0].flops + reports[1].flops;
  MPI_Allreduce(MPI_IN_PLACE, &flops, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GT(flops, 0.0);
  if (eps == 0) {
    const std::int64_t n = d.nrows();
    const auto x = d.to_dense(), x2 = dense_product(x, x, n), x3 = dense_product(x, x2, n);
    EXPECT_LE(test::relative_error(d2.to_dense(), x2), 1e-12);
    EXPECT_LE(test::relative_error(d3.to_dense(), x3), 1e-12);
  } else {
    // The unfused definition through the same algorithm: D2 = D D, D3 = D D2, both filtered.
    DistMatrix e2("E2", dist, d.layout()), e3("E3", dist, d.layout());
    plexus::multiply(*algo, *kern, Trans::N, Trans::N, 1.0, d, d, 0.0, e2, MultiplyOptions{eps, false});
    plexus::multiply(*algo, *kern, Trans::N, Trans::N, 1.0, d, e2, 0.0, e3, MultiplyOptions{eps, false});
    EXPECT_LE(test::relative_error(d2.to_dense(), e2.to_dense()), 1e-12);
    EXPECT_LE(test::relative_error(d3.to_dense(), e3.to_dense()), 1e-12);
    std::int64_t skipped = reports[0].skipped_products + reports[1].skipped_products;
    MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GT(skipped, 0) << "the filter must skip some products";
  }
}

TEST(SymmSquareCube, EveryVariantAndNDupMatchesTheDenseProducts) {
  for (const char* v : {"original", "baseline", "optimized"})
    for (int ndup : {1, 2, 3, 4, 5, 6}) {
      if (std::string(v) != "optimized" && ndup > 1) continue;  // one part: NDup does not apply
      for (double occ : {0.45, 1.0}) check(Setting{v, ndup}, true, occ, 0.0);
    }
}

TEST(SymmSquareCube, OperandsOffThePlaneAreMovedInAndOut) {
  for (const char* v : {"original", "optimized"}) check(Setting{v, 3}, false, 0.45, 0.0);
}

TEST(SymmSquareCube, FilteringMatchesTheUnfusedProducts) {
  for (const char* v : {"original", "baseline", "optimized"}) check(Setting{v, 4}, true, 0.6, 2.0);
}

TEST(SymmSquareCube, FewerActiveRanksThanAsked) {
  // ActiveRanks = 1: everything on rank 0, every other rank idle.
  check(Setting{"optimized", 4, 1}, true, 0.45, 0.0);
  check(Setting{"original", 1, 1}, false, 0.45, 0.0);
}

TEST(SymmSquareCube, TheReplicatedVariantMatchesTheDenseProducts) {
  // Algorithm 6 on q x q x c: 8 ranks 2x2x2, 27 ranks 3x3x2 (Replication 2: uneven steps, 9 idle)
  // and 3x3x3, fewer ranks with less replication than asked.
  for (int c : {1, 2, 3})
    for (int ndup : {1, 4})
      for (double occ : {0.45, 1.0}) check(Setting{"optimized", ndup, 0, c}, true, occ, 0.0);
  check(Setting{"baseline", 1, 0, 2}, false, 0.45, 0.0);
  check(Setting{"optimized", 3, 0, 2}, true, 0.6, 2.0);
  check(Setting{"optimized", 2, 1, 2}, true, 0.45, 0.0);  // ActiveRanks = 1
}

// The multiply's traffic on dense operands placed on the plane, against its dry-run model (to the
// byte), the totals the schedules imply, and the alpha-beta terms of the paper's formulas.
TEST(Mesh3D, CountedVolumeEqualsTheDryRunModel) {
  const int P = world_size();
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int nb = 36, bs = 4;  // 36 block rows: divisible by every plane side q <= 3
  for (int replication : {0, 1, 2, 3})
    for (const Setting& s : {Setting{"baseline", 1, 0, replication}, Setting{"optimized", 3, 0, replication}}) {
      const Shape shape = expected_shape(P, replication);
      if (P % shape.q != 0) continue;  // the operands could not be placed: moved every time
      SCOPED_TRACE("Replication " + std::to_string(replication) + ", " + s.variant);
      auto algo = nboverlap(s);
      auto kern = test::kernel("cpu");
      auto grid = Grid::create(MPI_COMM_WORLD);
      auto dist = algo->distribution_for(Distribution::block_cyclic(grid, nb, nb));
      const BlockLayout l{BlockSizes::uniform(nb, bs), BlockSizes::uniform(nb, bs)};
      GeneratorSpec g;
      g.occupancy = 1.0;
      g.seed = 7;
      DistMatrix a = generate_random("A", dist, l, g);
      g.seed = 8;
      DistMatrix b = generate_random("B", dist, l, g);
      DistMatrix c("C", dist, l);
      const MultiplyReport rep = algo->multiply(1.0, a, b, 0.0, c, *kern, MultiplyOptions{});
      // The model from the 2D panel sizes of the proposal (the whole matrix spread over P ranks).
      const std::int64_t total = std::int64_t{nb * bs} * (nb * bs) * 8, local = total / P;
      const int pr = me / grid->npcols(), pc = me % grid->npcols();
      const auto m = algo->model(ModelSpec{grid->nprows(), grid->npcols(), local, local, local}, pr, pc);
      ASSERT_TRUE(m.has_value());
      EXPECT_EQ(rep.traffic[0].bytes_received, m->bytes_a);
      EXPECT_EQ(rep.traffic[1].bytes_received, m->bytes_b);
      EXPECT_EQ(rep.traffic[2].bytes_sent, m->bytes_c);
      EXPECT_EQ(rep.ticks, m->ticks);
      EXPECT_GE(rep.peak_buffer_bytes, m->buffer_bytes);
      // Totals over the ranks, from the schedules: q = plane side, c = layers, panel = total / q^2.
      std::int64_t sums[3] = {rep.traffic[0].bytes_received, rep.traffic[1].bytes_received, rep.traffic[2].bytes_sent};
      MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      const std::int64_t q = shape.q, layers = shape.c, panel = total / (q * q);
      if (replication == 0) {
        // A to the p - 1 other layers of every fibre; B to every rank but P_{0,0,0}; C from every
        // rank but the p ranks P_{i,0,0}, which keep their sums.
        EXPECT_EQ(sums[0], (q * q * q - q * q) * panel);
        EXPECT_EQ(sums[1], (q * q * q - 1) * panel);
        EXPECT_EQ(sums[2], (q * q * q - q) * panel);
      } else {
        // Cannon: q^2 panels of each operand per step after the skew; the skew moves all but the
        // panels already in place on the plane (A: row 0, B: column 0); C from the c - 1 upper layers.
        EXPECT_EQ(sums[0], (q * q * layers - q) * panel + (q - layers) * q * q * panel);
        EXPECT_EQ(sums[1], sums[0]);
        EXPECT_EQ(sums[2], (layers - 1) * q * q * panel);
      }
      // The alpha-beta terms (baseline, one part, 3D): Bcast L + p - 1 and 2 (p-1) n / p, Reduce 2 L
      // and 2 (p-1) n / p, point to point 1 and n on both ends, L = ceil(log2 p).
      if (replication == 0 && s.ndup == 1 && me < q * q * q) {
        const int k = static_cast<int>(me / (q * q)), i = static_cast<int>(me / q % q), j = static_cast<int>(me % q);
        int L = 0;
        while ((1 << L) < q) ++L;
        double terms = 0, bytes = 0;
        if (q > 1) {
          terms += 2 * (L + q - 1) + 2 * L;  // A along the fibre, B along the column, C along the row
          bytes += 3 * 2.0 * (q - 1) * static_cast<double>(panel) / static_cast<double>(q);
        }
        const bool origin = i == 0 && j == 0 && k == 0;
        if (i == k && !origin) terms += 1, bytes += static_cast<double>(panel);              // B received
        if (k == 0 && !(i == 0 && j == 0)) terms += 1, bytes += static_cast<double>(panel);  // B sent
        if (j == k && k != 0) terms += 1, bytes += static_cast<double>(panel);               // C returned
        if (k == 0 && j != 0) terms += 1, bytes += static_cast<double>(panel);               // C received
        EXPECT_EQ(rep.extra.at("model_latency_terms"), terms);
        EXPECT_NEAR(rep.extra.at("model_bandwidth_bytes"), bytes, 1e-6 * bytes + 1e-9);
      }
    }
}

TEST(SymmSquareCube, RefusesWhatItCannotDo) {
  auto algo = nboverlap(Setting{"optimized", 2});
  auto kern = test::kernel("cpu");
  auto grid = Grid::create(MPI_COMM_WORLD);
  const BlockLayout rect{BlockSizes::uniform(4, 3), BlockSizes::uniform(5, 3)};
  DistMatrix r("R", Distribution::block_cyclic(grid, 4, 5), rect);
  DistMatrix r2("R2", Distribution::block_cyclic(grid, 4, 5), rect), r3 = r2;
  std::vector<MultiplyReport> reports;
  EXPECT_THROW(algo->square_and_cube(*kern, r, r2, r3, {}, reports), Error);
  EXPECT_TRUE(reports.empty());
}

}  // namespace
