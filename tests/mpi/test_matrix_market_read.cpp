// read_matrix_market and read_cp2k_csr on every rank count: rank 0 reads the file and sends each
// rank its entries, chunk by chunk (several Matrix Market files at once:
// test_matrix_market_files.cpp). The matrices are compared with the entries the test wrote (or
// with its own reading of the real h2o-32 files), every error in a file ends every rank with file
// and line, and the multiply problem of Matrix Market files cuts rows, inner dimension and
// columns apart (Problem/RowBlockSizes, BlockSizes, ColBlockSizes).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/input_files.hpp"
#include "matrix_market_files.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/context.hpp"
#include "plexus/cp2k_csr.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/multiply.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"

using namespace plexus;
using namespace plexus::test_files;

// Every field and symmetry of coordinate files, on blockings that differ for rows and columns,
// with chunks of 1 entry, a few entries and the default: the matrix and its block pattern are the
// ones the test wrote.
TEST(MatrixMarketRead, CoordinateFilesMatchWhatWasWritten) {
  struct File {
    std::string field, symmetry;
    std::int64_t rows, cols;
  };
  const std::vector<File> files{{"real", "general", 23, 17},
                                {"real", "symmetric", 21, 21},
                                {"integer", "general", 9, 30},
                                {"pattern", "general", 19, 26},
                                {"pattern", "symmetric", 25, 25}};
  unsigned seed = 1;
  for (const auto& f : files) {
    SCOPED_TRACE(f.field + " " + f.symmetry);
    Known known;
    const std::string path =
        write_shared("coord.mtx", coordinate_file(f.rows, f.cols, 0.2, f.field, f.symmetry, seed++, known));
    const BlockLayout layout{BlockSizes::covering(f.rows, 3), BlockSizes::covering(f.cols, 5)};
    for (const auto& dist : distributions(layout))
      for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, input::kReadChunkEntries}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk) + ", grid " + dist->grid().describe());
        const DistMatrix m = read_matrix_market(path, "M", dist, layout, chunk);
        EXPECT_EQ(m.to_dense(), known.dense);
        EXPECT_EQ(present_blocks(m), expected_blocks(known, layout));
      }
    remove_shared(path);
  }
}

// Array files (every value, column-major; symmetric: the lower triangle).
TEST(MatrixMarketRead, ArrayFilesMatchWhatWasWritten) {
  const BlockLayout layout{BlockSizes({2, 1, 3}), BlockSizes({4, 2})};
  std::vector<double> general(36), sym(36);
  std::string text = "%%MatrixMarket matrix array real general\n6 6\n";
  for (int q = 0; q < 36; ++q) {
    general[static_cast<std::size_t>(q)] = q == 7 ? 0.0 : 0.5 * q - 3;
    text += std::to_string(general[static_cast<std::size_t>(q)]) + "\n";
  }
  std::string lower = "%%MatrixMarket matrix array real symmetric\n6 6\n";
  for (int j = 0; j < 6; ++j)
    for (int i = j; i < 6; ++i) {
      const double v = 10.0 * i + j;
      sym[static_cast<std::size_t>(i + 6 * j)] = sym[static_cast<std::size_t>(j + 6 * i)] = v;
      lower += std::to_string(v) + "\n";
    }
  const std::string p1 = write_shared("general.mtx", text), p2 = write_shared("sym.mtx", lower);
  for (const auto& dist : distributions(layout))
    for (const std::size_t chunk : {std::size_t{2}, input::kReadChunkEntries}) {
      EXPECT_EQ(read_matrix_market(p1, "G", dist, layout, chunk).to_dense(), general);
      EXPECT_EQ(read_matrix_market(p2, "S", dist, layout, chunk).to_dense(), sym);
    }
  remove_shared(p1);
  remove_shared(p2);
}

// Only rank 0 opens the file: the other ranks name one that does not exist.
TEST(MatrixMarketRead, OnlyRankZeroOpensTheFile) {
  Known known;
  const std::string path = write_shared("only0.mtx", coordinate_file(12, 12, 0.4, "real", "general", 99, known));
  const std::string mine = world_rank() == 0 ? path : "/nonexistent-plexus-dir/none.mtx";
  const BlockLayout layout{BlockSizes::covering(12, 5), BlockSizes::covering(12, 5)};
  const MatrixMarketHeader h = read_matrix_market_header(mine, MPI_COMM_WORLD);
  EXPECT_EQ(h.rows, 12);
  EXPECT_EQ(h.field, "real");
  EXPECT_EQ(h.symmetry, "general");
  EXPECT_EQ(h.entries, static_cast<std::int64_t>(known.given.size()));
  auto dist = Distribution::random_permuted(Grid::create(MPI_COMM_WORLD), 3, 3, 1);
  EXPECT_EQ(read_matrix_market(mine, "M", dist, layout, 3).to_dense(), known.dense);
  remove_shared(path);
}

// The real Kohn-Sham matrix of 32 water molecules (gzip'ed, symmetric) against the test's own
// reading of it (zlib's gzread and sscanf), in atomic blocks 13,5,5.
TEST(MatrixMarketRead, RealH2o32MatchesAnIndependentReading) {
  const std::string path = test::data_file("h2o-32/H.mtx.gz");
  if (path.empty()) GTEST_SKIP() << "no h2o-32 data";
  const int n = 736;
  std::vector<double> expect(static_cast<std::size_t>(n) * n, 0.0);
  {
    const std::string text = test::gunzip(path);
    std::istringstream in(text);
    std::string line;
    bool size_seen = false;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '%') continue;
      if (!size_seen) {
        size_seen = true;
        continue;
      }
      int i = 0, j = 0;
      double v = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "%d %d %lf", &i, &j, &v), 3) << line;
      expect[static_cast<std::size_t>(i - 1 + (j - 1) * n)] = expect[static_cast<std::size_t>(j - 1 + (i - 1) * n)] = v;
    }
  }
  const BlockSizes atoms = BlockSizes::cyclic(96, {13, 5, 5});
  const BlockLayout layout{atoms, atoms};
  for (const auto& dist : distributions(layout))
    EXPECT_EQ(read_matrix_market(path, "H", dist, layout).to_dense(), expect);
}

// Errors anywhere in the file, in any chunk: every rank throws the same InputError naming file
// and line (none is left waiting for the others).
TEST(MatrixMarketRead, ErrorsEndEveryRankWithFileAndLine) {
  const BlockLayout layout{BlockSizes::covering(8, 3), BlockSizes::covering(8, 3)};
  std::string good = "%%MatrixMarket matrix coordinate real general\n8 8 20\n";
  for (int q = 0; q < 20; ++q) good += std::to_string(q % 8 + 1) + " " + std::to_string(q / 8 + 1) + " 1.5\n";
  auto with_line = [&](int entry, const std::string& text) {  // entry q (from 0) replaced, on line q + 3
    std::istringstream in(good);
    std::string out, line;
    for (int l = 1; std::getline(in, line); ++l) out += (l == entry + 3 ? text : line) + "\n";
    return out;
  };
  struct Case {
    std::string name, text, expect;
  };
  const std::vector<Case> cases{
      {"value", with_line(17, "2 3 x"), ", line 20: 'x' is not a number"},
      {"index", with_line(15, "9 1 1"), ", line 18: row index '9' is outside 1..8"},
      {"fields", with_line(12, "1 2"), ", line 15: expected 'row col value', found '1 2'"},
      {"duplicate", with_line(18, "4 2 7"), ", line 21: entry (4, 2) is given twice, at lines 14 and 21"},
      {"short", "%%MatrixMarket matrix coordinate real general\n8 8 21" + good.substr(good.find("\n8 8 20") + 7),
       ", line 22: file ends after 20 of 21 entries"},
      {"long", good + "8 8 1\n", ", line 23: more entries than the 20 announced"},
      {"banner", "%%MatrixMarket matrix coordinate complex general\n8 8 0\n",
       ", line 1: field 'complex' is not supported (real, integer or pattern)"},
      {"pattern value", "%%MatrixMarket matrix coordinate pattern general\n8 8 2\n1 1\n2 2 5\n",
       ", line 4: expected 'row col' (a pattern file gives no values), found '2 2 5'"},
      {"array pattern", "%%MatrixMarket matrix array pattern general\n8 8\n",
       ", line 1: an array file gives every value, so it cannot be 'pattern'"},
      {"dimensions", "%%MatrixMarket matrix coordinate real general\n8 9 0\n", " is 8x9 but the block sizes cover 8x8"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_shared("bad.mtx", c.text);
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{4}, input::kReadChunkEntries}) {
      const std::string msg = read_error(path, layout, chunk);
      EXPECT_NE(msg.find(path + c.expect), std::string::npos) << msg;
      EXPECT_TRUE(same_on_every_rank(msg)) << msg;
    }
    remove_shared(path);
  }
  // A file rank 0 cannot open: every rank is told so.
  const std::string msg = read_error("/nonexistent-plexus-dir/x.mtx", layout, 4);
  EXPECT_NE(msg.find("/nonexistent-plexus-dir/x.mtx"), std::string::npos) << msg;
  EXPECT_TRUE(same_on_every_rank(msg));
  std::string header_msg = "no error";
  try {
    read_matrix_market_header("/nonexistent-plexus-dir/x.mtx", MPI_COMM_WORLD);
  } catch (const InputError& e) {
    header_msg = e.what();
  }
  EXPECT_EQ(header_msg, msg);
}

// CP2K CSR files go the same way: one triangle (mirrored) or both, any chunk, and errors on every
// rank alike with file and line.
TEST(Cp2kCsrRead, MatchesWhatWasWrittenAndErrorsEndEveryRank) {
  Known known;
  coordinate_file(19, 19, 0.3, "real", "symmetric", 21, known);
  std::string upper, both;
  char line[96];
  for (std::int64_t i = 0; i < 19; ++i)
    for (std::int64_t j = 0; j < 19; ++j)
      if (known.given.count({i, j}) > 0) {
        std::snprintf(line, sizeof(line), "%12lld%12lld  %.17g\n", static_cast<long long>(i + 1),
                      static_cast<long long>(j + 1), known.dense[static_cast<std::size_t>(i + j * 19)]);
        both += line;
        if (i <= j) upper += line;
      }
  // The dimension is the largest index: the last diagonal element is always there in H and S.
  if (known.given.count({18, 18}) == 0) GTEST_SKIP() << "the test matrix lacks (19, 19)";
  const BlockLayout layout{BlockSizes::covering(19, 4), BlockSizes::covering(19, 4)};
  // Entries kept by the header's scan (the default), none kept, and a room too small for them
  // (the file is read again): the same matrix.
  for (const std::size_t keep : {kCp2kKeepBytes, std::size_t{0}, 3 * sizeof(double) * 4})
    for (const bool one_side : {true, false}) {
      SCOPED_TRACE("keep " + std::to_string(keep) + (one_side ? ", one triangle" : ", both"));
      const std::string path = write_shared("h.csr", one_side ? upper : both);
      const Cp2kCsrHeader h = read_cp2k_csr_header(path, MPI_COMM_WORLD, keep);
      EXPECT_EQ(h.dimension, 19);
      EXPECT_EQ(h.mirrored, one_side);
      EXPECT_EQ(h.kept != nullptr, keep == kCp2kKeepBytes && world_rank() == 0);
      for (const auto& dist : distributions(layout))
        for (const std::size_t chunk : {std::size_t{1}, std::size_t{5}, input::kReadChunkEntries})
          EXPECT_EQ(read_cp2k_csr(path, "H", dist, layout, h, chunk).to_dense(), known.dense);
      remove_shared(path);
    }
  {  // both files at once, each by its own rank
    const std::string p1 = write_shared("h1.csr", upper), p2 = write_shared("h2.csr", both);
    // The headers at once (file f scanned by rank f mod P) are those read one by one.
    const std::vector<Cp2kCsrHeader> headers = read_cp2k_csr_headers({p1, p2}, MPI_COMM_WORLD);
    ASSERT_EQ(headers.size(), 2u);
    for (std::size_t f = 0; f < 2; ++f) {
      const Cp2kCsrHeader one = read_cp2k_csr_header(f == 0 ? p1 : p2, MPI_COMM_WORLD);
      EXPECT_EQ(headers[f].dimension, one.dimension);
      EXPECT_EQ(headers[f].entries, one.entries);
      EXPECT_EQ(headers[f].mirrored, one.mirrored);
    }
    EXPECT_TRUE(headers[0].mirrored);
    EXPECT_FALSE(headers[1].mirrored);
    // A bad line in the second file: its message on every rank, whichever rank scanned it.
    const std::string bad = write_shared("bad2.csr", upper + "3 4 nan\n");
    std::string msg = "no error";
    try {
      read_cp2k_csr_headers({p1, bad}, MPI_COMM_WORLD);
    } catch (const InputError& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("bad2.csr, line " + std::to_string(std::count(upper.begin(), upper.end(), '\n') + 1)),
              std::string::npos)
        << msg;
    EXPECT_TRUE(same_on_every_rank(msg)) << msg;
    remove_shared(bad);
    for (const auto& dist : distributions(layout))
      for (const std::size_t chunk : {std::size_t{1}, std::size_t{5}, input::kReadChunkEntries}) {
        const std::vector<DistMatrix> m = read_cp2k_csr_files({p1, p2}, {"H", "S"}, dist, layout, headers, chunk);
        ASSERT_EQ(m.size(), 2u);
        EXPECT_EQ(m[0].to_dense(), known.dense);
        EXPECT_EQ(m[1].to_dense(), known.dense);
        EXPECT_EQ(m[1].name(), "S");
      }
    remove_shared(p1);
    remove_shared(p2);
  }
  auto error = [&](const std::string& text, std::size_t chunk) {
    const std::string path = write_shared("bad.csr", text);
    std::string msg = "no error";
    try {
      const Cp2kCsrHeader h = read_cp2k_csr_header(path, MPI_COMM_WORLD);
      auto dist = Distribution::random_permuted(Grid::create(MPI_COMM_WORLD), 5, 5, 3);
      read_cp2k_csr(path, "H", dist, layout, h, chunk);
    } catch (const InputError& e) {
      msg = e.what();
    }
    remove_shared(path);
    EXPECT_TRUE(same_on_every_rank(msg)) << msg;
    return msg;
  };
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}}) {
    std::string msg = error(upper + "1 x 2\n", chunk);
    EXPECT_NE(msg.find("bad.csr, line " + std::to_string(std::count(upper.begin(), upper.end(), '\n') + 1) +
                       ": column index 'x' is not an integer"),
              std::string::npos)
        << msg;
    // (18, 19) again, last: both lines named, whichever rank holds the block.
    msg = error(upper + "18 19 0.5\n", chunk);
    EXPECT_NE(msg.find(" is given twice, at lines "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" and " + std::to_string(std::count(upper.begin(), upper.end(), '\n') + 1) +
                       "; plexus does not add repeated entries up"),
              std::string::npos)
        << msg;
  }
}

// The entries a header's scan kept are what the read sends: the file is not read a second time.
// Rewritten between the header and the read (new values, the same pattern), the matrix still has
// the values the scan saw; with nothing kept, the read takes the file as it is then. Each file of
// several is kept on the rank that scanned it, which reads it.
TEST(Cp2kCsrRead, KeptEntriesSpareTheSecondRead) {
  const std::int64_t n = 11;
  auto file = [&](double scale, std::vector<double>& dense) {
    std::string text;
    dense.assign(static_cast<std::size_t>(n * n), 0.0);
    char line[96];
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i; j < n; ++j)
        if (i == j || (i + 2 * j) % 3 == 0) {
          const double v = scale * static_cast<double>(1 + i + 5 * j);
          std::snprintf(line, sizeof(line), "%lld %lld %.17g\n", static_cast<long long>(i + 1),
                        static_cast<long long>(j + 1), v);
          text += line;
          dense[static_cast<std::size_t>(i + j * n)] = dense[static_cast<std::size_t>(j + i * n)] = v;
        }
    return text;
  };
  std::vector<double> first, second;
  const std::string text1 = file(1.0, first), text2 = file(-0.5, second);
  ASSERT_NE(first, second);
  const BlockLayout layout{BlockSizes::covering(n, 3), BlockSizes::covering(n, 3)};
  const auto dist = Distribution::block_cyclic(Grid::create(MPI_COMM_WORLD), layout.rows.count(), layout.cols.count());
  for (const std::size_t keep : {kCp2kKeepBytes, std::size_t{0}}) {
    SCOPED_TRACE("keep " + std::to_string(keep));
    const std::string p1 = write_shared("kept1.csr", text1), p2 = write_shared("kept2.csr", text1);
    const std::vector<Cp2kCsrHeader> headers = read_cp2k_csr_headers({p1, p2}, MPI_COMM_WORLD, keep);
    const int ranks = [] {
      int size = 0;
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      return size;
    }();
    for (int f = 0; f < 2; ++f)
      EXPECT_EQ(headers[static_cast<std::size_t>(f)].kept != nullptr, keep > 0 && world_rank() == f % ranks) << f;
    write_shared("kept1.csr", text2);
    write_shared("kept2.csr", text2);
    const std::vector<DistMatrix> m = read_cp2k_csr_files({p1, p2}, {"H", "S"}, dist, layout, headers);
    EXPECT_EQ(m[0].to_dense(), keep > 0 ? first : second);
    EXPECT_EQ(m[1].to_dense(), keep > 0 ? first : second);
    remove_shared(p1);
    remove_shared(p2);
  }
}

namespace {

std::unique_ptr<Context> make_context() {
  std::shared_ptr<MultiplyAlgorithm> algo = test::strategy("cannon");
  std::shared_ptr<Kernel> kern = test::kernel("cpu");
  return std::make_unique<Context>(MPI_COMM_WORLD, algo, kern);
}

}  // namespace

// Problem/Generator = matrix-market with rectangular A (M x K), B (K x N) and C (M x N), the three
// dimensions cut by RowBlockSizes, BlockSizes and ColBlockSizes: the layouts agree where the
// multiply needs them to, and C + A B is the dense one. A pattern file is a matrix of ones.
TEST(MatrixMarketProblem, RowInnerAndColumnBlockSizesOfRectangularFiles) {
  auto ctx = make_context();
  Known ka, kb, kc;
  const std::string fa = write_shared("A.mtx", coordinate_file(23, 17, 0.3, "real", "general", 3, ka));
  const std::string fb = write_shared("B.mtx", coordinate_file(17, 30, 0.3, "pattern", "general", 4, kb));
  const std::string fc = write_shared("C.mtx", coordinate_file(23, 30, 0.1, "integer", "general", 5, kc));
  ParameterList p("Problem");
  p.set("Generator", std::string("matrix-market"));
  p.set("FileA", fa);
  p.set("FileB", fb);
  p.set("FileC", fc);
  p.set("RowBlockSizes", std::string("5,5,13"));  // 23: 5,5,13
  p.set("BlockSizes", std::string("4,9"));        // 17: 4,9,4
  p.set("ColBlockSizes", std::string("7"));       // 30: 7,7,7,7,2
  for (const char* kind : {"random", "block-cyclic"}) {
    SCOPED_TRACE(kind);
    p.set("Distribution", std::string(kind));
    auto m = build_problem(p, *ctx, true);
    EXPECT_EQ(m.a->layout().rows.sizes(), (std::vector<int>{5, 5, 13}));
    EXPECT_EQ(m.a->layout().cols.sizes(), (std::vector<int>{4, 9, 4}));
    EXPECT_TRUE(m.b->layout().rows == m.a->layout().cols);
    EXPECT_EQ(m.b->layout().cols.sizes(), (std::vector<int>{7, 7, 7, 7, 2}));
    EXPECT_TRUE(m.c->layout().rows == m.a->layout().rows);
    EXPECT_TRUE(m.c->layout().cols == m.b->layout().cols);
    EXPECT_EQ(m.a->to_dense(), ka.dense);
    EXPECT_EQ(m.b->to_dense(), kb.dense);
    EXPECT_EQ(m.c->to_dense(), kc.dense);
    multiply(ctx->multiply_algorithm(), ctx->kernel(), Trans::N, Trans::N, 1.0, *m.a, *m.b, 1.0, *m.c);
    std::vector<double> c = kc.dense;
    test::dense_gemm(23, 30, 17, 1.0, ka.dense, kb.dense, 1.0, c);
    EXPECT_LT(test::relative_error(m.c->to_dense(), c), 1e-14);
  }
  // Files that do not multiply are refused before they are read, naming the parameter.
  auto refused = [&](ParameterList q) {
    try {
      build_problem(q, *ctx, true);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ParameterList swapped(p);
  swapped.set("FileB", fa);
  EXPECT_NE(refused(swapped).find("cannot be multiplied"), std::string::npos);
  ParameterList wrong_c(p);
  wrong_c.set("FileC", fb);
  EXPECT_NE(refused(wrong_c).find("does not match A*B (23x30)"), std::string::npos);
  ParameterList bad_sizes(p);
  bad_sizes.set("ColBlockSizes", std::string("7,0"));
  EXPECT_NE(refused(bad_sizes).find("Problem/ColBlockSizes"), std::string::npos);
  remove_shared(fa);
  remove_shared(fb);
  remove_shared(fc);
  ctx->release();
}

// multiply/TransA, TransB = T with files: the file gives op(A)'s transpose (K x M), cut by
// BlockSizes and RowBlockSizes; C + op(A) op(B) is the dense one.
TEST(MatrixMarketProblem, TransposedFilesAreCutByTheirDimension) {
  auto ctx = make_context();
  auto transposed = [](const Known& k) {
    std::vector<double> t(k.dense.size());
    for (std::int64_t j = 0; j < k.cols; ++j)
      for (std::int64_t i = 0; i < k.rows; ++i)
        t[static_cast<std::size_t>(j + i * k.cols)] = k.dense[static_cast<std::size_t>(i + j * k.rows)];
    return t;
  };
  ParameterList p("Problem");
  p.set("Generator", std::string("matrix-market"));
  p.set("RowBlockSizes", std::string("5,5,13"));  // M = 23
  p.set("BlockSizes", std::string("4,9"));        // K = 17
  p.set("ColBlockSizes", std::string("7"));       // N = 30
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(std::string("op(A) ") + (ta ? "T" : "N") + ", op(B) " + (tb ? "T" : "N"));
      Known ka, kb, kc;
      const std::string fa =
          write_shared("A.mtx", coordinate_file(ta ? 17 : 23, ta ? 23 : 17, 0.3, "real", "general", 13, ka));
      const std::string fb =
          write_shared("B.mtx", coordinate_file(tb ? 30 : 17, tb ? 17 : 30, 0.3, "real", "general", 14, kb));
      const std::string fc = write_shared("C.mtx", coordinate_file(23, 30, 0.1, "real", "general", 15, kc));
      p.set("FileA", fa);
      p.set("FileB", fb);
      p.set("FileC", fc);
      auto m = build_problem(p, *ctx, true, ta, tb);
      EXPECT_EQ((ta ? m.a->layout().cols : m.a->layout().rows).sizes(), (std::vector<int>{5, 5, 13}));
      EXPECT_EQ((ta ? m.a->layout().rows : m.a->layout().cols).sizes(), (std::vector<int>{4, 9, 4}));
      EXPECT_EQ((tb ? m.b->layout().cols : m.b->layout().rows).sizes(), (std::vector<int>{4, 9, 4}));
      EXPECT_EQ((tb ? m.b->layout().rows : m.b->layout().cols).sizes(), (std::vector<int>{7, 7, 7, 7, 2}));
      EXPECT_EQ(m.a->to_dense(), ka.dense);
      EXPECT_EQ(m.b->to_dense(), kb.dense);
      multiply(ctx->multiply_algorithm(), ctx->kernel(), ta ? Trans::T : Trans::N, tb ? Trans::T : Trans::N, 2.0, *m.a,
               *m.b, 1.0, *m.c);
      std::vector<double> c = kc.dense;
      test::dense_gemm(23, 30, 17, 2.0, ta ? transposed(ka) : ka.dense, tb ? transposed(kb) : kb.dense, 1.0, c);
      EXPECT_LT(test::relative_error(m.c->to_dense(), c), 1e-14);
      // op(B)'s rows must be op(A)'s columns: B given untransposed where it is stored transposed.
      try {
        build_problem(p, *ctx, true, ta, !tb);
        ADD_FAILURE() << "no error";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be multiplied: 17 columns, 30 rows"), std::string::npos)
            << e.what();
      }
      remove_shared(fa);
      remove_shared(fb);
      remove_shared(fc);
    }
  ctx->release();
}

// The multiply itself checks that the operands' blockings agree, and says where they do not.
TEST(MatrixMarketProblem, MultiplyTellsWhereBlockingsDiffer) {
  auto ctx = make_context();
  auto grid = Grid::create(MPI_COMM_WORLD);
  auto empty = [&](const char* name, const BlockSizes& rows, const BlockSizes& cols) {
    DistMatrix m(name, Distribution::block_cyclic(grid, rows.count(), cols.count()), BlockLayout{rows, cols});
    m.finalize();
    return m;
  };
  const BlockSizes m5({5, 5, 13}), k1({4, 9, 4}), k2({4, 4, 9}), n7({7, 7, 7, 7, 2});
  auto message = [&](const DistMatrix& a, const DistMatrix& b, DistMatrix& c) {
    try {
      multiply(ctx->multiply_algorithm(), ctx->kernel(), Trans::N, Trans::N, 1.0, a, b, 0.0, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  DistMatrix a = empty("A", m5, k1), b = empty("B", k2, n7), c = empty("C", m5, n7);
  std::string msg = message(a, b, c);
  EXPECT_NE(msg.find("the columns of op(A) and the rows of op(B) are cut into different blocks (op(A)'s columns: 17 in "
                     "3 blocks, op(B)'s rows: 17 in 3 blocks; block 1 has 9 in op(A)'s columns, 4 in op(B)'s rows"),
            std::string::npos)
      << msg;
  DistMatrix b1 = empty("B", k1, n7), c1 = empty("C", BlockSizes({5, 18}), n7);
  msg = message(a, b1, c1);
  EXPECT_NE(msg.find("C's rows and op(A)'s rows are cut into different blocks (C's rows: 23 in 2 blocks, op(A)'s "
                     "rows: 23 in 3 blocks; block 1 has 18 in C's rows, 5 in op(A)'s rows"),
            std::string::npos)
      << msg;
  DistMatrix c2 = empty("C", m5, BlockSizes({7, 7, 7, 7, 3}));
  msg = message(a, b1, c2);
  EXPECT_NE(msg.find("C's columns and op(B)'s columns are cut into different blocks (C's columns: 31 in 5 blocks"),
            std::string::npos)
      << msg;
  ctx->release();
}
