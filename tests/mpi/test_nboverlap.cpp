// comm_nboverlap's SymmSquareCube (Huang and Chow, Algorithms 3, 4 and 5): D^2 and D^3 of a
// symmetric D against the dense products, for every Variant, NDup = 1..6 (parts that do not
// divide the panels), block-sparse and dense D, filtering on (against the same algorithm's two
// plain multiplies, the unfused definition) and off, operands on the plane (distribution_for) or
// elsewhere (moved in and out), all ranks active (1, 8, 27) or some idle (2, 4, 9, 16), and
// ActiveRanks below the rank count. The 3D multiply itself runs the multiply conformance suite.
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
};

std::unique_ptr<CommStrategy> nboverlap(const Setting& s) {
  test::load_plugins();
  static const bool loaded = (Registry::global().load_file(PLEXUS_NBOVERLAP_PATH), true);
  (void)loaded;
  return test::strategy("nboverlap", {"Variant=" + s.variant, "NDup=" + std::to_string(s.ndup), "MinPartBytes=0",
                                      "ActiveRanks=" + std::to_string(s.active)});
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
               (on_plane ? ", on the plane" : ", moved") + ", occupancy " + std::to_string(occ) + ", eps " +
               std::to_string(eps));
  DistMatrix d = symmetric(dist, nb, sizes, occ);
  DistMatrix d2("D2", dist, d.layout()), d3("D3", dist, d.layout());
  std::vector<MultiplyReport> reports;
  ASSERT_TRUE(algo->square_and_cube(*kern, d, d2, d3, MultiplyOptions{eps, false}, reports));
  ASSERT_EQ(reports.size(), 2u);
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
