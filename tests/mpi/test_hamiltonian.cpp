// build_hamiltonian (core/src/problem.cpp) on every rank count: H and S from Matrix Market and
// CP2K CSR files (plain or gzip) alike, and the problems it refuses.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "multiply_fixtures.hpp"
#include "plexus/context.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/model.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"

// LAPACK (OpenBLAS): the dense references of the model's spectrum. The trailing lengths are the
// hidden lengths of the character arguments (gfortran's convention).
extern "C" void dsygvd_(const int* itype, const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
                        double* b, const int* ldb, double* w, double* work, const int* lwork, int* iwork,
                        const int* liwork, int* info, std::size_t jobz_len, std::size_t uplo_len);
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len,
                        std::size_t uplo_len);

using namespace plexus;

namespace {

std::unique_ptr<Context> make_context() {
  std::shared_ptr<MultiplyAlgorithm> algo = test::strategy("cannon");
  std::shared_ptr<Kernel> kern = test::kernel("cpu");
  return std::make_unique<Context>(MPI_COMM_WORLD, algo, kern);
}

// A path every rank names alike (rank 0's process id).
std::string shared_path(const std::string& name) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return "/tmp/plexus_test_" + std::to_string(pid) + "_" + name;
}

// Rank 0 writes `text` (gzip-compressed when `gz`); every rank returns once it is there.
std::string write_shared(const std::string& name, const std::string& text, bool gz = false) {
  const std::string path = shared_path(name);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path) << text;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

void remove_shared(const std::string& path) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::remove(path.c_str());
}

// A symmetric n x n test matrix with zeros (sparse blocks), column-major: the independent side.
std::vector<double> symmetric_matrix(int n, double shift) {
  std::vector<double> d(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      if (i != j && (i + 2 * j) % 3 == 0) continue;
      const double v = i == j ? shift + i : std::sin(1.0 + i * 7 + j) / (1 + i - j);
      d[static_cast<std::size_t>(i + j * n)] = d[static_cast<std::size_t>(j + i * n)] = v;
    }
  return d;
}

// Its lower triangle as Matrix Market, its upper one as CP2K writes it (%.17g keeps every bit).
std::string as_matrix_market(const std::vector<double>& d, int n) {
  std::string body;
  int count = 0;
  char line[96];
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i)
      if (const double v = d[static_cast<std::size_t>(i + j * n)]; v != 0.0) {
        std::snprintf(line, sizeof(line), "%d %d %.17g\n", i + 1, j + 1, v);
        body += line;
        ++count;
      }
  return "%%MatrixMarket matrix coordinate real symmetric\n" + std::to_string(n) + " " + std::to_string(n) + " " +
         std::to_string(count) + "\n" + body;
}
std::string as_cp2k_upper(const std::vector<double>& d, int n) {
  std::string out;
  char line[96];
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j)
      if (const double v = d[static_cast<std::size_t>(i + j * n)]; v != 0.0) {
        std::snprintf(line, sizeof(line), "%12d%12d  %.17g\n", i + 1, j + 1, v);
        out += line;
      }
  return out;
}

ParameterList problem(const std::string& generator, const std::string& h, const std::string& s,
                      const std::string& sizes) {
  ParameterList p("Problem");
  p.set("Generator", generator);
  p.set("FileH", h);
  p.set("FileS", s);
  p.set("BlockSizes", sizes);
  return p;
}

std::string input_error(const ParameterList& p, Context& ctx) {
  try {
    build_hamiltonian(p, ctx);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

ParameterList model(int molecules, const std::string& sizes, const std::vector<std::string>& more = {}) {
  ParameterList p("Problem");
  p.set("Generator", std::string("model"));
  p.set("Molecules", molecules);
  p.set("BlockSizes", sizes);
  for (const auto& kv : more) apply_override(p, kv);
  return p;
}

// Eigenvalues, ascending, of the dense symmetric-definite pair (a, b) (b empty: of a alone);
// info != 0 from LAPACK (b not positive definite: info > n) fails the test.
std::vector<double> eigenvalues(std::vector<double> a, std::vector<double> b, int n) {
  std::vector<double> w(static_cast<std::size_t>(n));
  const int lwork = 1 + 6 * n + 2 * n * n, liwork = 3 + 5 * n, itype = 1;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  int info = 0;
  if (b.empty())
    dsyevd_("N", "L", &n, a.data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  else
    dsygvd_(&itype, "N", "L", &n, a.data(), &n, b.data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork,
            &info, 1, 1);
  EXPECT_EQ(info, 0) << (info > n ? "the overlap is not positive definite" : "LAPACK failed");
  return w;
}

bool symmetric(const std::vector<double>& d, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j + 1; i < n; ++i)
      if (d[static_cast<std::size_t>(i + j * n)] != d[static_cast<std::size_t>(j + i * n)]) return false;
  return true;
}

// Blocks in each block row of m (on every rank).
std::vector<int> blocks_per_row(const DistMatrix& m) {
  const auto g = m.gather_blocks();
  std::vector<int> count(static_cast<std::size_t>(m.layout().rows.count()), 0);
  for (std::size_t q = 0; q < g.index.size(); q += 2) ++count[static_cast<std::size_t>(g.index[q])];
  return count;
}

}  // namespace

TEST(Hamiltonian, Cp2kCsrAndMatrixMarketGiveTheSameMatrices) {
  auto ctx = make_context();
  const int n = 18;
  const auto h = symmetric_matrix(n, -3.0), s = symmetric_matrix(n, 10.0);
  const std::string h_mtx = write_shared("H.mtx", as_matrix_market(h, n));
  const std::string s_mtx = write_shared("S.mtx.gz", as_matrix_market(s, n), true);
  const std::string h_csr = write_shared("H.csr.gz", as_cp2k_upper(h, n), true);
  const std::string s_csr = write_shared("S.csr", as_cp2k_upper(s, n));
  for (const char* sizes : {"2,3,1", "6", "1"}) {
    const auto mm = build_hamiltonian(problem("matrix-market", h_mtx, s_mtx, sizes), *ctx);
    const auto csr = build_hamiltonian(problem("cp2k-csr", h_csr, s_csr, sizes), *ctx);
    ASSERT_TRUE(mm.s && csr.s);
    EXPECT_EQ(mm.h->to_dense(), h) << sizes;
    EXPECT_EQ(csr.h->to_dense(), h) << sizes;
    EXPECT_EQ(csr.s->to_dense(), s) << sizes;
    EXPECT_EQ(mm.s->to_dense(), s) << sizes;
    EXPECT_EQ(csr.h->layout(), mm.h->layout());
    EXPECT_EQ(csr.h->layout().rows.total(), n);
  }
  // No FileS: an orthogonal basis.
  EXPECT_FALSE(build_hamiltonian(problem("cp2k-csr", h_csr, "", "3"), *ctx).s);
  for (const auto& f : {h_mtx, s_mtx, h_csr, s_csr}) remove_shared(f);
  ctx->release();
}

TEST(Hamiltonian, RefusedProblemsSayWhy) {
  auto ctx = make_context();
  const int n = 18;
  const std::string h_csr = write_shared("H.csr", as_cp2k_upper(symmetric_matrix(n, 1.0), n));
  const std::string small = write_shared("S_small.csr", as_cp2k_upper(symmetric_matrix(n - 1, 1.0), n - 1));
  std::string msg = input_error(problem("cp2k-csr", "", "", "6"), *ctx);
  EXPECT_NE(msg.find("Problem/Generator = 'cp2k-csr' for a density-matrix solver needs Problem/FileH"),
            std::string::npos)
      << msg;
  msg = input_error(problem("cp2k-csr", h_csr, "", "4"), *ctx);
  EXPECT_NE(msg.find("Problem/BlockSizes '4' does not add up to the dimension 18 of '" + h_csr + "'"),
            std::string::npos)
      << msg;
  msg = input_error(problem("cp2k-csr", h_csr, small, "6"), *ctx);
  EXPECT_NE(msg.find("S ('" + small + "') is 17 x 17; the overlap must be square with H's dimension 18"),
            std::string::npos)
      << msg;
  msg = input_error(problem("random", h_csr, "", "6"), *ctx);
  EXPECT_NE(msg.find("Problem/Generator = 'random' does not give them"), std::string::npos) << msg;
  // A CP2K file is no Matrix Market file, and the other way round.
  msg = input_error(problem("matrix-market", h_csr, "", "6"), *ctx);
  EXPECT_NE(msg.find("expected '%%MatrixMarket' banner"), std::string::npos) << msg;
  remove_shared(h_csr);
  remove_shared(small);
  ctx->release();
}

// The model's matrices do not depend on the ranks: the distributed H and S equal those one rank
// generates alone, for two distributions; both exactly symmetric.
TEST(HamiltonianModel, SameMatricesOnAnyRankCountAndDistribution) {
  auto ctx = make_context();
  const auto alone_dist = Distribution::block_cyclic(Grid::create(MPI_COMM_SELF), 30, 30);
  const auto spec = model_spec(model(30, "4", {"ModelDisplacement=0.2", "ModelSeed=5"}));
  const auto alone = generate_model(spec, alone_dist);
  const auto h1 = alone.h->to_dense(), s1 = alone.s->to_dense();
  EXPECT_TRUE(symmetric(h1, 120));
  EXPECT_TRUE(symmetric(s1, 120));
  for (const char* dist : {"random", "block-cyclic"}) {
    const auto m = build_hamiltonian(model(30, "4", {"ModelDisplacement=0.2", "ModelSeed=5",
                                                     std::string("Distribution=") + dist}),
                                     *ctx);
    ASSERT_TRUE(m.h && m.s);
    EXPECT_EQ(m.h->to_dense(), h1) << dist;
    EXPECT_EQ(m.s->to_dense(), s1) << dist;
  }
  // Another seed, another matrix.
  EXPECT_NE(build_hamiltonian(model(30, "4", {"ModelDisplacement=0.2", "ModelSeed=6"}), *ctx).h->to_dense(), h1);
  ctx->release();
}

// The bounds of docs/model-generator.md against LAPACK: S positive definite within [1-s, 1+s],
// exactly N*b/2 generalized eigenvalues below the gap, none inside it, all within the spectrum
// bound; also with the largest couplings the parameters allow.
TEST(HamiltonianModel, DenseSpectrumKeepsTheGap) {
  auto ctx = make_context();
  for (const auto& extra : {std::vector<std::string>{},
                            std::vector<std::string>{"ModelCoupling=0.95", "ModelOverlap=0.95", "ModelDecay=2",
                                                     "ModelRadius=2.5", "ModelDisplacement=0.25", "ModelWidth=0.1"}}) {
    const auto p = model(12, "6", extra);
    const auto spec = model_spec(p);
    const auto bounds = model_bounds(spec);
    EXPECT_EQ(model_electrons(p), 72);
    const auto m = build_hamiltonian(p, *ctx);
    const int n = 72;
    const auto h = m.h->to_dense(), s = m.s->to_dense();
    ASSERT_TRUE(symmetric(h, n));
    ASSERT_TRUE(symmetric(s, n));
    // The couplings are there: some element outside the diagonal blocks is not zero.
    double coupling = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (i / 6 != j / 6) coupling = std::max(coupling, std::abs(h[static_cast<std::size_t>(i + j * n)]));
    EXPECT_GT(coupling, 0.0);
    const auto sw = eigenvalues(s, {}, n);
    EXPECT_GE(sw.front(), bounds.s_min);
    EXPECT_LE(sw.back(), bounds.s_max);
    EXPECT_GT(bounds.s_min, 0.0);
    const auto e = eigenvalues(h, s, n);
    const int occupied = 72 / 2;
    EXPECT_LE(e[occupied - 1], bounds.homo_max);
    EXPECT_GE(e[occupied], bounds.lumo_min);
    EXPECT_LT(bounds.homo_max, 0.0);
    EXPECT_GT(bounds.lumo_min, 0.0);
    EXPECT_GE(e.front(), -bounds.spectrum_max);
    EXPECT_LE(e.back(), bounds.spectrum_max);
  }
  ctx->release();
}

// Localised: a perfect lattice has 27 blocks in every block row (the molecule and its 26
// neighbours within 1.8 spacings) whatever N; displaced, never more than the bound.
TEST(HamiltonianModel, BlocksPerRowDoNotGrowWithN) {
  auto ctx = make_context();
  for (int n : {27, 64, 125}) {
    const auto m = build_hamiltonian(model(n, "2", {"ModelDisplacement=0"}), *ctx);
    for (const auto* x : {m.h.get(), m.s.get()})
      for (int c : blocks_per_row(*x)) ASSERT_EQ(c, 27) << n;
  }
  for (int n : {64, 216}) {
    const auto p = model(n, "2", {"ModelDisplacement=0.25"});
    const int bound = model_bounds(model_spec(p)).max_blocks_per_row;
    const auto m = build_hamiltonian(p, *ctx);
    const auto count = blocks_per_row(*m.h);
    EXPECT_LE(*std::max_element(count.begin(), count.end()), bound) << n;
    EXPECT_EQ(count, blocks_per_row(*m.s));
  }
  EXPECT_EQ(model_box(64), (std::array<std::int64_t, 3>{4, 4, 4}));
  EXPECT_EQ(model_box(12), (std::array<std::int64_t, 3>{3, 2, 2}));
  EXPECT_EQ(model_box(7), (std::array<std::int64_t, 3>{7, 1, 1}));
  EXPECT_EQ(model_box(1000), (std::array<std::int64_t, 3>{10, 10, 10}));
  ctx->release();
}

TEST(HamiltonianModel, RefusedParametersSayWhy) {
  auto ctx = make_context();
  std::string msg = input_error(model(8, "13,5,5"), *ctx);
  EXPECT_NE(msg.find("Problem/Generator = 'model' needs one block size"), std::string::npos) << msg;
  msg = input_error(model(8, "23"), *ctx);
  EXPECT_NE(msg.find("needs an even block size of at most 2048 (b/2 occupied and b/2 empty levels a molecule), got 23; "
                     "e.g. 22 or 24"),
            std::string::npos)
      << msg;
  msg = input_error(model(8, "4", {"ModelCoupling=1"}), *ctx);
  EXPECT_NE(msg.find("ModelCoupling"), std::string::npos) << msg;
  msg = input_error(model(0, "4"), *ctx);
  EXPECT_NE(msg.find("Molecules"), std::string::npos) << msg;
  ctx->release();
}

// Problem/RowBlockSizes and ColBlockSizes: the multiply problem's rows of A and C, and columns of B
// and C, cut apart from the inner dimension (BlockSizes); the product is the dense one. The
// density-matrix problem and symmetric generation refuse them.
TEST(ProblemBlockSizes, PerDimensionListsCutRowsInnerAndColumns) {
  auto ctx = make_context();
  ParameterList p("Problem");
  p.set("Blocks", 6);
  p.set("BlockSizes", std::string("3"));
  p.set("RowBlockSizes", std::string("2,4"));
  p.set("ColBlockSizes", std::string("5"));
  p.set("Symmetric", false);
  p.set("Occupancy", 0.5);
  {
    auto m = build_problem(p, *ctx, true);
    EXPECT_EQ(m.a->nrows(), 18);  // 2,4,2,4,2,4
    EXPECT_EQ(m.a->ncols(), 18);  // 6 x 3
    EXPECT_EQ(m.b->nrows(), 18);
    EXPECT_EQ(m.b->ncols(), 30);  // 6 x 5
    EXPECT_EQ(m.c->nrows(), 18);
    EXPECT_EQ(m.c->ncols(), 30);
    EXPECT_EQ(m.a->layout().rows.size(1), 4);
    std::vector<double> c = m.c->to_dense();
    const auto a = m.a->to_dense(), b = m.b->to_dense();
    multiply(ctx->multiply_algorithm(), ctx->kernel(), Trans::N, Trans::N, 1.0, *m.a, *m.b, 1.0, *m.c);
    test::dense_gemm(18, 30, 18, 1.0, a, b, 1.0, c);
    EXPECT_LT(test::relative_error(m.c->to_dense(), c), 1e-13);
  }
  auto refused = [&](const ParameterList& q, bool hamiltonian) {
    try {
      if (hamiltonian)
        build_hamiltonian(q, *ctx);
      else
        build_problem(q, *ctx, false);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ParameterList sym(p);
  sym.set("Symmetric", true);
  EXPECT_NE(refused(sym, false).find("Problem/RowBlockSizes and ColBlockSizes only with Problem/Symmetric = false"),
            std::string::npos);
  ParameterList bad(p);
  bad.set("ColBlockSizes", std::string("5,x"));
  EXPECT_NE(refused(bad, false).find("Problem/ColBlockSizes"), std::string::npos);
  ParameterList ham = model(8, "4");
  ham.set("RowBlockSizes", std::string("2"));
  EXPECT_NE(refused(ham, true).find("Problem/RowBlockSizes cuts rows and columns differently"), std::string::npos);
  ctx->release();
}

// Problem/Rows, Inner and Cols: a rectangular random multiply problem (DBCSR's M, K, N), the block
// patterns cycled over each dimension and the last block cut; OccupancyA/B/C per matrix; A or B
// generated transposed for op = T. The product through the driver is the dense one.
TEST(ProblemShapes, RectangularTransposedPerMatrixOccupancy) {
  auto ctx = make_context();
  ParameterList p("Problem");
  p.set("Rows", 23);   // 5,5,13 -> cut: 5,5,13 (23)
  p.set("Inner", 17);  // 4,9 cycled: 4,9,4 (17)
  p.set("Cols", 30);   // 7: 7,7,7,7,2
  p.set("RowBlockSizes", std::string("5,5,13"));
  p.set("BlockSizes", std::string("4,9"));
  p.set("ColBlockSizes", std::string("7"));
  p.set("Symmetric", false);
  p.set("OccupancyA", 1.0);  // dense
  p.set("OccupancyB", 0.3);
  p.set("OccupancyC", 0.2);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(std::string("op(A) ") + (ta ? "T" : "N") + ", op(B) " + (tb ? "T" : "N"));
      auto m = build_problem(p, *ctx, true, ta, tb);
      EXPECT_EQ(m.c->nrows(), 23);
      EXPECT_EQ(m.c->ncols(), 30);
      EXPECT_EQ(m.c->layout().cols.count(), 5);
      EXPECT_EQ(m.c->layout().cols.size(4), 2);
      EXPECT_EQ(m.a->nrows(), ta ? 17 : 23);
      EXPECT_EQ(m.a->ncols(), ta ? 23 : 17);
      EXPECT_EQ(m.b->nrows(), tb ? 30 : 17);
      EXPECT_EQ(m.b->layout().rows.count(), tb ? 5 : 3);
      EXPECT_DOUBLE_EQ(m.a->occupancy(), 1.0);
      EXPECT_LT(m.b->occupancy(), 1.0);
      EXPECT_LT(m.c->occupancy(), 1.0);
      const Trans opa = ta ? Trans::T : Trans::N, opb = tb ? Trans::T : Trans::N;
      auto a = m.a->to_dense(), b = m.b->to_dense();
      auto transposed = [](const std::vector<double>& x, std::int64_t r, std::int64_t c) {
        std::vector<double> t(x.size());
        for (std::int64_t j = 0; j < c; ++j)
          for (std::int64_t i = 0; i < r; ++i)
            t[static_cast<std::size_t>(j + i * c)] = x[static_cast<std::size_t>(i + j * r)];
        return t;
      };
      if (ta) a = transposed(a, 17, 23);
      if (tb) b = transposed(b, 30, 17);
      std::vector<double> c = m.c->to_dense();
      multiply(ctx->multiply_algorithm(), ctx->kernel(), opa, opb, -0.5, *m.a, *m.b, 2.0, *m.c);
      test::dense_gemm(23, 30, 17, -0.5, a, b, 2.0, c);
      EXPECT_LT(test::relative_error(m.c->to_dense(), c), 1e-13);
    }
  // Per-matrix occupancy 0 stands for Occupancy; symmetric generation needs equal dimensions.
  ParameterList q(p);
  q.set("OccupancyA", 0.0);
  q.set("Occupancy", 1.0);
  EXPECT_DOUBLE_EQ(build_problem(q, *ctx, false).a->occupancy(), 1.0);
  ParameterList sym("Problem");
  sym.set("Rows", 20);
  sym.set("Inner", 20);
  sym.set("Cols", 24);
  sym.set("BlockSizes", std::string("4"));
  sym.set("Symmetric", true);
  try {
    build_problem(sym, *ctx, false);
    ADD_FAILURE() << "symmetric A and B of unequal dimensions were generated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Problem/Rows, Inner and Cols equal"), std::string::npos) << e.what();
  }
  ctx->release();
}
