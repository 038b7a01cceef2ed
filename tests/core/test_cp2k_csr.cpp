// CP2K CSR files (KS_CSR_WRITE, S_CSR_WRITE): full or upper triangle, plain or gzip, every bad line
// named with file and line.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "input_files.hpp"
#include "plexus/cp2k_csr.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix_market.hpp"

using namespace plexus;
using plexus::test::write_gz;
using plexus::test::write_plain;

namespace {
std::shared_ptr<const Distribution> one_rank(const BlockLayout& l) {
  return Distribution::block_cyclic(Grid::create(MPI_COMM_SELF), l.rows.count(), l.cols.count());
}

DistMatrix read_csr(const std::string& path, const BlockLayout& layout) {
  return read_cp2k_csr(path, "H", one_rank(layout), layout, read_cp2k_csr_header(path));
}

// The InputError message of reading `text` as a CP2K CSR file (header scan, then a 3 x 3 read).
std::string error_of(const std::string& text) {
  const std::string path = write_plain("bad.csr", text);
  std::string msg = "no error";
  try {
    const auto h = read_cp2k_csr_header(path);
    const BlockLayout l{BlockSizes::covering(h.dimension, 2), BlockSizes::covering(h.dimension, 2)};
    read_cp2k_csr(path, "H", one_rank(l), l, h);
  } catch (const InputError& e) {
    msg = e.what();
  }
  std::remove(path.c_str());
  return msg;
}

// The 3 x 3 symmetric matrix of the small files, column-major.
const std::vector<double> kDense{4, -1, 0.5, -1, 3, 0, 0.5, 0, 2};
}  // namespace

TEST(Cp2kCsr, UpperTriangleIsMirrored) {
  // As CP2K writes it with UPPER_TRIANGULAR: fixed-width columns, Fortran E format.
  const std::string text =
      "           1           1   0.40000000000000E+01\n"
      "           1           2  -0.10000000000000E+01\n"
      "           1           3   0.50000000000000E+00\n"
      "           2           2   0.30000000000000E+01\n"
      "           3           3   0.20000000000000E+01\n";
  const BlockLayout layout{BlockSizes({2, 1}), BlockSizes({2, 1})};
  for (const std::string& path : {write_plain("upper.csr", text), write_gz("upper_csr", text)}) {
    const auto h = read_cp2k_csr_header(path);
    EXPECT_EQ(h.dimension, 3);
    EXPECT_EQ(h.entries, 5);
    EXPECT_TRUE(h.mirrored);
    const DistMatrix m = read_csr(path, layout);
    EXPECT_EQ(m.to_dense(), kDense);
    EXPECT_EQ(m.local_nblocks(), 4);  // (1,2) and its mirror (2,1): every block
    std::remove(path.c_str());
  }
}

// Fields are read by std::from_chars where it takes all of them, by strtoll and strtod otherwise
// ('+', hexadecimal, underflow): the same values either way.
TEST(Cp2kCsr, EverySpellingOfANumberGivesStrtodsValue) {
  const std::string text = "+1 1 0.40000000000000E+01\n1 +2 -1\n1 3 +0x1p-1\n2 2 3.\n3 3 2\n2 3 1e-400\n";
  const std::string path = write_plain("spellings.csr", text);
  const auto h = read_cp2k_csr_header(path);
  EXPECT_EQ(h.entries, 6);
  EXPECT_EQ(read_csr(path, BlockLayout{BlockSizes({2, 1}), BlockSizes({2, 1})}).to_dense(), kDense);
  std::remove(path.c_str());
}

TEST(Cp2kCsr, FullMatrixIsTakenAsGiven) {
  // Both triangles: no mirroring, an unsymmetric pair stays as it is (the solvers check symmetry).
  const std::string text = "1 1 4\n2 1 -1\n3 1 0.5\n1 2 -1\n\n2 2 3\n1 3 0.25\n3 3 2\n";
  const std::string path = write_plain("full.csr", text);
  const auto h = read_cp2k_csr_header(path);
  EXPECT_FALSE(h.mirrored);
  EXPECT_EQ(h.entries, 7);
  std::vector<double> expect = kDense;
  expect[6] = 0.25;  // (1,3)
  EXPECT_EQ(read_csr(path, BlockLayout{BlockSizes({1, 2}), BlockSizes({1, 2})}).to_dense(), expect);
  std::remove(path.c_str());
  // The lower triangle alone is mirrored like the upper one.
  const std::string lower = write_plain("lower.csr", "1 1 4\n2 1 -1\n3 1 0.5\n2 2 3\n3 3 2\n");
  EXPECT_TRUE(read_cp2k_csr_header(lower).mirrored);
  EXPECT_EQ(read_csr(lower, BlockLayout{BlockSizes({3}), BlockSizes({3})}).to_dense(), kDense);
  std::remove(lower.c_str());
}

TEST(Cp2kCsr, BadLinesNameFileAndLine) {
  const std::string file = plexus::test::temp_path("bad.csr");
  const std::pair<std::string, std::string> cases[] = {
      {"1 1 1\n2 2 x\n", "line 2: value 'x' is not a number"},
      {"1 1 1\n2 2 nan\n", "line 2: value 'nan' is not a finite number; matrix values must be finite"},
      {"1 1 1\n2 2 -Infinity\n", "line 2: value '-Infinity' is not a finite number"},
      {"1 1 1\n2 2 1e999\n", "line 2: value '1e999' is outside the range of double"},
      {"1 1 1\n0 2 1\n", "line 2: row index '0' is below 1 (CP2K CSR indices start at 1)"},
      {"1 1 1\n1 -3 1\n", "line 2: column index '-3' is below 1"},
      {"1 1 1\n1.5 1 1\n", "line 2: row index '1.5' is not an integer"},
      {"1 1 1\n99999999999999999999 1 1\n", "line 2: row index '99999999999999999999' is outside the range of int64"},
      {"1 1 1\n2 2\n", "line 2: expected 'row col value', found '2 2'"},
      {"1 1 1\n2 2 1 0\n", "line 2: expected 'row col value', found '2 2 1 0'"},
      {"", "line 1: no entries (expected lines 'row col value')"},
      {"\n  \n", "line 1: no entries"},
      {"1 1 1\n1 2 5\n2 2 1\n1 2 6\n", "line 4: entry (1, 2) is given twice, at lines 2 and 4"},
      {"1 1 1\n2 1 5\n1 2 5\n2 2 1\n2 1 6\n", "line 5: entry (2, 1) is given twice, at lines 2 and 5"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string msg = error_of(text);
    EXPECT_NE(msg.find("CP2K CSR file " + file + ", " + expect), std::string::npos) << text << "\n-> " << msg;
  }
}

// h2o-32's H, written here as CP2K writes it with UPPER_TRIANGULAR (gzip-compressed, the values'
// text unchanged), reads as the Matrix Market file it came from.
TEST(Cp2kCsr, WaterHamiltonianAsMatrixMarket) {
  const std::string mtx = plexus::test::data_file("h2o-32/H.mtx.gz");
  if (mtx.empty()) GTEST_SKIP() << "h2o-32/H.mtx.gz not in PLEXUS_TEST_DATA_DIR";
  std::istringstream in(plexus::test::gunzip(mtx));
  std::string line, csr;
  std::int64_t entries = 0;
  bool size_line = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '%') continue;
    if (!size_line) {
      size_line = true;
      continue;
    }
    std::istringstream ls(line);
    long long r = 0, c = 0;
    std::string value;
    ls >> r >> c >> value;
    char row[64];
    std::snprintf(row, sizeof(row), "%12lld%12lld  ", c, r);  // the lower triangle's (r, c) as the upper's (c, r)
    csr += row + value + "\n";
    ++entries;
  }
  const std::string path = write_gz("h2o_H.csr.gz", csr);
  const auto h = read_cp2k_csr_header(path);
  EXPECT_EQ(h.dimension, 736);
  EXPECT_EQ(h.entries, entries);
  EXPECT_EQ(h.entries, 270810);
  EXPECT_TRUE(h.mirrored);
  const BlockLayout layout{BlockSizes::cyclic(96, {13, 5, 5}), BlockSizes::cyclic(96, {13, 5, 5})};
  const DistMatrix a = read_csr(path, layout);
  const DistMatrix b = read_matrix_market(mtx, "H", one_rank(layout), layout);
  EXPECT_EQ(a.to_dense(), b.to_dense());
  EXPECT_EQ(a.local_nblocks(), b.local_nblocks());
  std::remove(path.c_str());
}
