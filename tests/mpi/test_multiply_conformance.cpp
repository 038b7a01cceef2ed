// The multiply conformance suite (Ginkgo's pattern: one test source, every implementation).
//
// Every multiply algorithm the registry finds (the in-tree plugins and whatever PLEXUS_PLUGIN_PATH
// adds), each with its default parameters, plus the specs listed in PLEXUS_CONFORMANCE_EXTRA
// (comma-separated name[:Key=Value...], e.g. "rma25d:Layers=4"), runs every case of the table
// below on both orientations of the rank count's grid, through core's one driver, against the
// dense product of the gathered operands. PLEXUS_CONFORMANCE_ONLY (same syntax) replaces the
// list: that is how a third-party plugin runs the suite on itself (docs/plugin-guide.md).
// PLEXUS_CONFORMANCE_KERNEL (a kernel name) replaces the local backend of every case.
//
// The operands of every case are built on the distributions the algorithm asks for
// (distribution_for), as a solver builds them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "conformance_specs.hpp"
#include "dense_reference.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/multiply.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

using namespace plexus;

namespace {

using test::Spec;

// The algorithms under test.
const std::vector<Spec>& algorithms() {
  static const std::vector<Spec> list = [] {
    Registry::global().load_default();
    std::vector<Spec> out;
    for (const auto* e : Registry::global().list(ComponentKind::Comm))
      out.push_back(Spec{e->descriptor.name, e->descriptor.name, {}});  // every comm component multiplies
    return test::specs_under_test(out);
  }();
  static const bool printed = [] {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      std::string names;
      for (const auto& s : list) names += (names.empty() ? "" : ", ") + s.text;
      std::printf("multiply algorithms under test: %s\n", names.c_str());
    }
    return true;
  }();
  (void)printed;
  return list;
}

std::unique_ptr<CommStrategy> make(const Spec& s) {
  ParameterList p(s.name);
  for (const auto& kv : s.params) apply_override(p, kv);
  return Registry::global().make_comm(s.name, p, "Communication/" + s.name);
}

enum class Alias { None, CisA, CisB, CisAB };

struct Case {
  std::string name;
  int m, k, n;             // block counts: op(A) is m x k, op(B) k x n, C m x n
  std::vector<int> sizes;  // block sizes, cycled (one list for every dimension)
  double occupancy;
  double alpha, beta;
  Trans ta = Trans::N, tb = Trans::N;
  Alias alias = Alias::None;
  double filter_eps = 0;
  bool retain = false;
  int repeat = 1;
  std::string dist = "random";
  std::string kernel = "cpu";
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// Column-major r x c -> its transpose.
std::vector<double> dense_transpose(const std::vector<double>& x, std::int64_t r, std::int64_t c) {
  std::vector<double> t(x.size());
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) t[static_cast<std::size_t>(j + i * c)] = x[static_cast<std::size_t>(i + j * r)];
  return t;
}

// The dense matrix with every block outside `pattern` set to zero.
std::vector<double> masked(const std::vector<double>& x, const DistMatrix& like,
                           const std::set<std::pair<int, int>>& pattern) {
  std::vector<double> out(x.size(), 0.0);
  const auto& l = like.layout();
  const std::int64_t nr = l.rows.total();
  for (const auto& [i, j] : pattern)
    for (int c = 0; c < l.cols.size(j); ++c)
      for (int r = 0; r < l.rows.size(i); ++r) {
        const auto q = static_cast<std::size_t>((l.cols.offset(j) + c) * nr + l.rows.offset(i) + r);
        out[q] = x[q];
      }
  return out;
}

std::set<std::pair<int, int>> pattern_of(const DistMatrix& m) {
  std::set<std::pair<int, int>> s;
  for (const auto& [ij, v] : test::blocks_of(m)) s.insert(ij);
  return s;
}

DistMatrix generated(const std::string& name, const Case& k, const MultiplyAlgorithm& algo,
                     std::shared_ptr<const Grid> grid, int rows, int cols, std::uint64_t seed) {
  auto bs = [&](int n) { return BlockSizes::cyclic(n, k.sizes); };
  auto dist = algo.distribution_for(Distribution::by_name(k.dist, grid, rows, cols, 17));
  GeneratorSpec g;
  g.occupancy = k.occupancy;
  g.seed = seed;
  return generate_random(name, dist, BlockLayout{bs(rows), bs(cols)}, g);
}

class MultiplyConformance : public testing::TestWithParam<Case> {};

TEST_P(MultiplyConformance, MatchesTheDenseProduct) {
  const Case& k = GetParam();
  ASSERT_FALSE(algorithms().empty()) << "no multiply algorithm found";
  // PLEXUS_CONFORMANCE_KERNEL runs every case on one local backend (e.g. a device backend).
  const char* kernel_override = std::getenv("PLEXUS_CONFORMANCE_KERNEL");
  std::unique_ptr<plexus::Kernel> kern;
  try {
    kern = test::kernel(kernel_override != nullptr && *kernel_override != '\0' ? kernel_override : k.kernel);
  } catch (const plexus::UnavailableError& e) {  // the same on every rank: a GPU kernel without a GPU
    GTEST_SKIP() << e.what();
  }
  for (const Spec& spec : algorithms()) {
    for (const auto& grid : test::grids()) {
      SCOPED_TRACE("algorithm " + spec.text + ", case " + k.name + ", grid " + grid->describe());
      auto algo = make(spec);
      // Stored shapes: A is m x k (k x m when transposed), B k x n (n x k), C m x n.
      const bool sq = k.alias != Alias::None;
      ASSERT_TRUE(!sq || (k.m == k.k && k.k == k.n)) << "aliasing cases are square";
      DistMatrix a = k.ta == Trans::N ? generated("A", k, *algo, grid, k.m, k.k, 101)
                                      : generated("A", k, *algo, grid, k.k, k.m, 101);
      DistMatrix b = k.tb == Trans::N ? generated("B", k, *algo, grid, k.k, k.n, 202)
                                      : generated("B", k, *algo, grid, k.n, k.k, 202);
      DistMatrix c = k.beta != 0 || k.retain ? generated("C", k, *algo, grid, k.m, k.n, 303)
                                             : DistMatrix("C", algo->distribution_for(Distribution::by_name(
                                                                   k.dist, grid, k.m, k.n, 17)),
                                                          BlockLayout{BlockSizes::cyclic(k.m, k.sizes),
                                                                      BlockSizes::cyclic(k.n, k.sizes)});
      DistMatrix* A = &a;
      DistMatrix* B = &b;
      DistMatrix* C = &c;
      if (k.alias == Alias::CisA || k.alias == Alias::CisAB) C = A;
      if (k.alias == Alias::CisB) C = B;
      if (k.alias == Alias::CisAB) B = A;

      // The expectation, densely, following the aliasing through the repetitions.
      const std::int64_t mr = A->nrows(), mc = A->ncols(), br = B->nrows(), bc = B->ncols();
      std::vector<double> xa = A->to_dense(), xb = B->to_dense(), xc = C->to_dense();
      const std::set<std::pair<int, int>> old_pattern = pattern_of(*C);
      std::vector<double> expect, final_filter_only;
      if (k.filter_eps > 0) {
        test::Case fk{k.name, k.m, k.k, k.n, k.sizes, k.occupancy, k.alpha, k.beta, k.dist, k.kernel, k.filter_eps};
        test::Operands o{std::move(a), std::move(b), std::move(c)};
        expect = test::filtered_reference(fk, o);
        final_filter_only = test::filtered_reference(fk, o, /*on_the_fly=*/false);
        a = std::move(o.a);
        b = std::move(o.b);
        c = std::move(o.c);
      } else {
        for (int r = 0; r < k.repeat; ++r) {
          const auto oa = k.ta == Trans::N ? xa : dense_transpose(xa, mr, mc);
          const auto ob = k.tb == Trans::N ? xb : dense_transpose(xb, br, bc);
          const std::int64_t m = C->nrows(), n = C->ncols(), kk = k.ta == Trans::N ? mc : mr;
          std::vector<double> next = xc;
          test::dense_gemm(m, n, kk, k.alpha, oa, ob, k.beta, next);
          if (k.retain) next = masked(next, *C, old_pattern);
          xc = next;
          if (k.alias == Alias::CisA || k.alias == Alias::CisAB) xa = next;
          if (k.alias == Alias::CisB || k.alias == Alias::CisAB) xb = next;
        }
        expect = xc;
      }

      MultiplyReport rep;
      for (int r = 0; r < k.repeat; ++r)
        rep = plexus::multiply(*algo, *kern, k.ta, k.tb, k.alpha, *A, *B, k.beta, *C,
                               MultiplyOptions{k.filter_eps, k.retain});
      EXPECT_LE(test::relative_error(C->to_dense(), expect), 1e-12);
      EXPECT_EQ(rep.strategy, algo->name());
      EXPECT_EQ(rep.kernel, kern->name());
      // A backend that takes every dense tick whole (the dense_panels cases) is handed some by every
      // algorithm that multiplies through core's accumulators (all but dbcsr): their ticks' panels
      // hold the operands' blocks, all present. None on sparse operands or on a backend that does
      // not take them. With filtering, only ticks whose products the filter keeps all go dense (a
      // tick's count depends on its norms): C matching `expect`, filtered by the rule, shows that
      // none went dense that should have skipped a product.
      std::int64_t dense = rep.dense_ticks;
      MPI_Allreduce(MPI_IN_PLACE, &dense, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      const auto* host = dynamic_cast<const plexus::HostKernel*>(kern.get());
      double mean_size = 0;  // the case's blocks (its sizes, cycled alike in every dimension)
      for (int s : k.sizes) mean_size += static_cast<double>(s) / static_cast<double>(k.sizes.size());
      const std::int64_t size = host != nullptr ? host->dense_min_size({mean_size, mean_size, mean_size}) : 0;
      if (size == 0 || k.occupancy < 1.0) {
        EXPECT_EQ(dense, 0) << "dense ticks on sparse operands or on a backend without them";
      } else if (size == 1 && spec.name != "dbcsr" && k.filter_eps == 0) {
        EXPECT_GT(dense, 0) << "no tick computed as a dense product";
      }
      if (k.retain) {
        EXPECT_EQ(pattern_of(*C), old_pattern) << "retain_sparsity must keep C's block pattern";
      }
      if (k.filter_eps > 0) {
        // The case is one where skipping products changes C, so matching `expect` shows that the
        // products were skipped, and by the rule. An algorithm that counts its products (every
        // one multiplying through core's accumulators) must also have counted skipped ones; one
        // whose products an external library computes says that it cannot count them.
        EXPECT_GT(test::relative_error(final_filter_only, expect), 1e-3)
            << "the filter case must be one where on-the-fly filtering changes the result";
        if (rep.extra.count("skipped_products_not_counted") == 0) {
          std::int64_t skipped = rep.skipped_products;
          MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
          EXPECT_GT(skipped, 0) << "the filter case must skip some products";
        }
      }
      if (k.ta == Trans::T || k.tb == Trans::T) {
        EXPECT_EQ(rep.extra.count("transpose_bytes_received"), 1u);
      }
    }
  }
}

// A case name, then m, k, n, block sizes, occupancy, alpha, beta.
Case with(Case c, Trans ta, Trans tb) {
  c.ta = ta;
  c.tb = tb;
  return c;
}
Case aliased(Case c, Alias a) {
  c.alias = a;
  return c;
}
Case filtered(Case c, double eps) {
  c.filter_eps = eps;
  return c;
}
Case retained(Case c) {
  c.retain = true;
  return c;
}
Case repeated(Case c, int n) {
  c.repeat = n;
  return c;
}
Case on(Case c, std::string dist, std::string kernel) {
  c.dist = std::move(dist);
  c.kernel = std::move(kernel);
  return c;
}

const Case kSquare{"square", 10, 10, 10, {3, 7}, 0.4, 1.0, 0.0};
const Case kAlphaBeta{"alpha_beta", 11, 13, 9, {1, 5, 13, 23}, 0.35, -0.75, 1.5};

INSTANTIATE_TEST_SUITE_P(
    Cases, MultiplyConformance,
    testing::Values(
        on(Case{"uniform_reference", 12, 12, 12, {7}, 0.3, 1.0, 0.0}, "block-cyclic", "reference"),
        kAlphaBeta,                                              // mixed odd sizes, alpha and beta
        Case{"rectangular", 5, 17, 14, {3, 8}, 0.5, 2.0, -1.0},  // more columns than rows
        Case{"tall", 15, 4, 6, {2, 9}, 0.6, 1.0, 0.5},           // more rows than columns
        Case{"empty", 8, 8, 8, {4}, 0.0, 1.0, 0.5},              // A, B empty: C = beta*C
        Case{"dense", 6, 6, 6, {5}, 1.0, 0.5, 0.0},              // every block present
        // Dense ticks as dgemm on packed panels: C created (written), C added into
        // with alpha and beta, and C aliased to A and B.
        on(Case{"dense_panels", 8, 7, 9, {5, 3}, 1.0, 0.5, 0.0}, "random", "cpu:DenseMinSize=1"),
        on(Case{"dense_panels_beta", 8, 7, 9, {5, 3}, 1.0, -1.0, 1.5}, "random", "cpu:DenseMinSize=1"),
        on(aliased(Case{"dense_panels_alias", 8, 8, 8, {4, 3}, 1.0, 1.0, 0.5}, Alias::CisAB), "random",
           "cpu:DenseMinSize=1"),
        // Repeated: cannon's fused ticks then write B densely into a shared window.
        repeated(on(Case{"dense_panels_repeat", 8, 7, 9, {5, 3}, 1.0, 0.5, 1.0}, "random", "cpu:DenseMinSize=1"), 3),
        Case{"alpha_zero", 7, 7, 7, {3}, 0.5, 0.0, 2.0},  // C = beta*C, patterns kept
        repeated(Case{"repeat", 9, 9, 9, {2, 6}, 0.4, 0.5, 1.0}, 3),
        filtered(Case{"filter", 10, 12, 10, {1, 5, 13}, 0.6, 1.0, 0.0}, 2.0), with(kAlphaBeta, Trans::T, Trans::N),
        with(kAlphaBeta, Trans::N, Trans::T), with(kAlphaBeta, Trans::T, Trans::T),
        aliased(Case{"alias_c_is_a", 9, 9, 9, {2, 5}, 0.5, 0.5, 1.5}, Alias::CisA),
        aliased(Case{"alias_c_is_b", 9, 9, 9, {2, 5}, 0.5, -1.0, 0.5}, Alias::CisB),
        aliased(Case{"alias_c_is_a_is_b", 9, 9, 9, {2, 5}, 0.5, 1.0, 0.0}, Alias::CisAB),
        repeated(aliased(Case{"alias_square_repeated", 8, 8, 8, {3}, 0.5, 0.5, 0.25}, Alias::CisAB), 3),
        aliased(with(kSquare, Trans::T, Trans::N), Alias::CisAB),
        retained(Case{"retain_sparsity", 10, 10, 10, {3, 4}, 0.3, 1.0, 0.0}),
        retained(Case{"retain_sparsity_beta", 10, 10, 10, {3, 4}, 0.3, -1.0, 2.0})),
    [](const testing::TestParamInfo<Case>& info) {
      std::string n = info.param.name;
      if (info.param.ta == Trans::T || info.param.tb == Trans::T)
        n += std::string("_") + static_cast<char>(info.param.ta) + static_cast<char>(info.param.tb);
      return n;
    });

// Plans (ProductPlans): a multiply repeated with the same operands replays the local products'
// stacks wherever the algorithm hands them the same panels, and C is the same to the last bit as
// the multiply that recorded them and as one without plans. The algorithms in the tree must
// replay every tick; one from elsewhere whose accumulators see other panels the second time
// (other offsets) builds its stacks again (from the first tick that differs), with the same C.
// With beta = 0 the multiplies go into one C, whose size (the room reserved for the next C)
// changes after the first. With filtering no plan is made.
TEST(MultiplyPlans, ARepeatedMultiplyGivesTheSameCWithAndWithoutPlans) {
  const Case k = kAlphaBeta;
  auto kern = test::kernel("cpu");
  for (const Spec& spec : algorithms())
    for (const auto& grid : test::grids())
      for (const double beta : {k.beta, 0.0}) {
        SCOPED_TRACE("algorithm " + spec.text + ", grid " + grid->describe() + ", beta " + std::to_string(beta));
        auto algo = make(spec);
        const DistMatrix a = generated("A", k, *algo, grid, k.m, k.k, 101);
        const DistMatrix b = generated("B", k, *algo, grid, k.k, k.n, 202);
        const DistMatrix c0 = generated("C", k, *algo, grid, k.m, k.n, 303);
        std::vector<double> expect = c0.to_dense();
        test::dense_gemm(a.nrows(), b.ncols(), a.ncols(), k.alpha, a.to_dense(), b.to_dense(), beta, expect);
        ProductPlans plans;
        std::vector<std::vector<double>> local;  // C's local values: without plans, recording, replaying
        std::vector<MultiplyReport> reports;
        DistMatrix c = c0;
        for (ProductPlans* p : {static_cast<ProductPlans*>(nullptr), &plans, &plans}) {
          if (beta != 0) c = c0;
          reports.push_back(plexus::multiply(*algo, *kern, Trans::N, Trans::N, k.alpha, a, b, beta, c, {}, p));
          EXPECT_LE(test::relative_error(c.to_dense(), expect), 1e-12);
          const PanelView v = c.local().view();
          local.emplace_back(v.data, v.data + v.data_size);
        }
        EXPECT_EQ(reports[0].replayed_ticks, 0);
        EXPECT_EQ(reports[1].replayed_ticks, 0);
        std::int64_t counts[2] = {reports[2].replayed_ticks, reports[2].ticks_with_products};
        MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        // The algorithms in the tree hand their accumulators the same panels every time.
        if (std::set<std::string>{"cannon", "ring", "rma25d", "nboverlap"}.count(spec.name) > 0) {
          EXPECT_GT(counts[1], 0);
          EXPECT_EQ(counts[0], counts[1]) << "every tick replayed";
        }
        EXPECT_EQ(local[1], local[0]) << "recording changes nothing";
        EXPECT_EQ(local[2], local[0]) << "replaying changes nothing";
        // Filtering: no plans.
        ProductPlans none;
        DistMatrix filtered = c0;
        plexus::multiply(*algo, *kern, Trans::N, Trans::N, k.alpha, a, b, beta, filtered, MultiplyOptions{1e-3}, &none);
        EXPECT_EQ(none.size(), 0U);
      }
}

TEST(MultiplyDriver, BadOperandsAreRefusedBeforeAnyWork) {
  const Spec& spec = algorithms().front();
  auto algo = make(spec);
  auto kern = test::kernel("reference");
  auto grid = Grid::create(MPI_COMM_WORLD);
  const Case k{"bad", 6, 5, 4, {3}, 0.5, 1.0, 0.0};
  DistMatrix a = generated("A", k, *algo, grid, 6, 5, 1), b = generated("B", k, *algo, grid, 5, 4, 2);
  DistMatrix c = generated("C", k, *algo, grid, 6, 4, 3);
  // op(A)'s columns do not match op(B)'s rows.
  EXPECT_THROW(plexus::multiply(*algo, *kern, Trans::T, Trans::N, 1.0, a, b, 0.0, c), Error);
  // C's shape is not op(A) x op(B).
  EXPECT_THROW(plexus::multiply(*algo, *kern, Trans::N, Trans::N, 1.0, a, b, 0.0, a), Error);
  EXPECT_THROW(plexus::multiply(*algo, *kern, Trans::N, Trans::N, 1.0, a, b, 0.0, c, MultiplyOptions{-1.0}),
               InputError);
  EXPECT_THROW(plexus::multiply(*algo, *kern, Trans::N, Trans::N, std::nan(""), a, b, 0.0, c), InputError);
  // Nothing above touched C.
  EXPECT_EQ(c.to_dense(), generated("C", k, *algo, grid, 6, 4, 3).to_dense());
  // Operands on a grid with layers (a 1 x 1 x P mesh): refused, not multiplied on layer 0 only.
  const int P = plexus::mpi::size(MPI_COMM_WORLD);
  if (P > 1) {
    auto mesh = Grid::create(MPI_COMM_WORLD, 1, 1, P);
    const BlockLayout l{BlockSizes::uniform(4, 3), BlockSizes::uniform(4, 3)};
    GeneratorSpec g;
    g.occupancy = 0.5;
    DistMatrix x = generate_random("X", Distribution::block_cyclic(mesh, 4, 4), l, g);
    DistMatrix y = generate_random("Y", Distribution::block_cyclic(mesh, 4, 4), l, g);
    try {
      plexus::multiply(*algo, *kern, Trans::N, Trans::N, 1.0, x, x, 0.0, y);
      ADD_FAILURE() << "operands on a grid with layers were accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("layers"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
