#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dense_reference.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/input.hpp"
#include "plexus/matrix_market.hpp"

using namespace plexus;

namespace {
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/plexus_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

std::shared_ptr<const Distribution> one_rank(int nbr, int nbc) {
  return Distribution::block_cyclic(Grid::create(MPI_COMM_SELF), nbr, nbc);
}

// The message of the InputError thrown by reading `text`.
std::string read_error(const std::string& text) {
  const std::string path = temp_file("bad.mtx", text);
  try {
    read_matrix_market(path, "M", one_rank(2, 2), BlockLayout{BlockSizes::covering(4, 2), BlockSizes::covering(4, 2)});
  } catch (const InputError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "no error";
}
}  // namespace

TEST(MatrixMarket, ReadCoordinateSymmetric) {
  const std::string path = temp_file("sym.mtx",
                                     "%%MatrixMarket matrix coordinate real symmetric\n% comment\n3 3 3\n"
                                     "1 1 2.5\n3 1 -1\n2 2 4\n");
  BlockLayout layout{BlockSizes({2, 1}), BlockSizes({2, 1})};
  DistMatrix m = read_matrix_market(path, "M", one_rank(2, 2), layout);
  auto d = m.to_dense();
  const std::vector<double> expect{2.5, 0, -1, 0, 4, 0, -1, 0, 0};
  EXPECT_EQ(d, expect);
  EXPECT_EQ(m.local_nblocks(), 3);  // (0,0), (1,0), (0,1); block (1,1) has no entry
  std::remove(path.c_str());
}

TEST(MatrixMarket, ReadArrayGeneral) {
  const std::string path = temp_file("arr.mtx", "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n");
  DistMatrix m = read_matrix_market(path, "M", one_rank(1, 2), BlockLayout{BlockSizes({2}), BlockSizes({2, 1})});
  EXPECT_EQ(m.to_dense(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  std::remove(path.c_str());
}

TEST(MatrixMarket, WriteThenReadIsIdentical) {
  BlockLayout layout{BlockSizes::cyclic(7, {1, 5, 13}), BlockSizes::cyclic(6, {4, 2})};
  auto dist = one_rank(7, 6);
  GeneratorSpec s;
  s.occupancy = 0.5;
  s.seed = 11;
  DistMatrix a = generate_random("A", dist, layout, s);
  const std::string path = "/tmp/plexus_test_" + std::to_string(::getpid()) + "_rt.mtx";
  write_matrix_market(a, path);
  DistMatrix b = read_matrix_market(path, "B", dist, layout);
  EXPECT_EQ(a.to_dense(), b.to_dense());
  EXPECT_EQ(a.local_nblocks(), b.local_nblocks());
  std::remove(path.c_str());
}

TEST(MatrixMarket, MalformedFilesNameTheLine) {
  EXPECT_NE(read_error("hello\n").find("line 1"), std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate complex general\n4 4 1\n1 1 1\n").find("complex"),
            std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 1\n5 1 2\n").find("line 4"),
            std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 x\n").find("'x' is not a number"),
            std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate real general\n4 4 3\n1 1 1\n2 2 2\n").find("2 of 3"),
            std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate real general\n5 4 1\n1 1 1\n").find("5x4"), std::string::npos);
  EXPECT_NE(read_error("%%MatrixMarket matrix coordinate real general\n4 4 1\n1 1 1\n2 2 2\n").find("more entries"),
            std::string::npos);
}

// Values and indices are read by std::from_chars where it takes the whole field, and by strtod and
// strtoll otherwise (a leading '+', hexadecimal, underflow): every spelling gives strtod's value.
TEST(MatrixMarket, EverySpellingOfANumberGivesStrtodsValue) {
  std::vector<std::string> values;
  std::istringstream spellings(
      "1 -2.5 +3.25 0.1 .5 5. 1e5 1E-5 -0x1.8p1 1e-400 -0 007 4.9e-324 1.7976931348623157e308 "
      "0.30000000000000004441 -7.3966296882919003e-01 123456789012345678901234567890");
  for (std::string v; spellings >> v;) values.push_back(v);
  std::string text = "%%MatrixMarket matrix coordinate real general\n" + std::to_string(values.size()) + " 1 " +
                     std::to_string(values.size()) + "\n";
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i % 2 == 0 ? "+" : "") + std::to_string(i + 1) + "\t1  " + values[i] + " \r\n";
  const std::string path = temp_file("spellings.mtx", text);
  const auto n = static_cast<int>(values.size());
  DistMatrix m =
      read_matrix_market(path, "M", one_rank(n, 1), BlockLayout{BlockSizes::covering(n, 1), BlockSizes({1})});
  const std::vector<double> d = m.to_dense();
  ASSERT_EQ(d.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double expected = std::strtod(values[i].c_str(), nullptr);
    EXPECT_EQ(std::memcmp(&d[i], &expected, sizeof(double)), 0) << values[i] << ": " << d[i] << " vs " << expected;
  }
  std::remove(path.c_str());
}

namespace {
bool printable(const std::string& s) {
  for (char ch : s)
    if (ch < 0x20 || ch >= 0x7f) return false;
  return true;
}
}  // namespace

// Issue 9 item 5: a NaN or an infinity was read as such, and the run ended with "norm nan".
TEST(MatrixMarketStrict, NonFiniteValuesNameFileAndLine) {
  for (const char* value : {"nan", "-inf", "Infinity", "1e999"}) {
    const std::string msg =
        read_error(std::string("%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 1\n2 2 ") + value + "\n");
    EXPECT_NE(msg.find("bad.mtx, line 4: value '" + std::string(value) + "' is "), std::string::npos) << msg;
    EXPECT_NE(msg.find("; Matrix Market values must be finite"), std::string::npos) << msg;
  }
  std::string array = "%%MatrixMarket matrix array real general\n4 4\n";
  for (int i = 0; i < 15; ++i) array += "1\n";
  EXPECT_NE(read_error(array + "NaN\n").find("line 18: value 'NaN' is not a finite number"), std::string::npos);
}

// Duplicate coordinate entries were summed by nobody: the last one won.
TEST(MatrixMarketStrict, DuplicateEntriesNameBothLines) {
  std::string msg = read_error("%%MatrixMarket matrix coordinate real general\n% c\n4 4 3\n1 1 1\n2 2 2\n1 1 3\n");
  EXPECT_NE(msg.find("bad.mtx, line 6: entry (1, 1) is given twice, at lines 4 and 6; the Matrix Market format does "
                     "not define repeated entries"),
            std::string::npos)
      << msg;
  // Symmetric: the lower triangle once (its mirror is no second entry, and an upper one is refused).
  msg = read_error("%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 1\n3 3 2\n2 1 5\n");
  EXPECT_NE(msg.find("line 5: entry (2, 1) is given twice, at lines 3 and 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a symmetric file gives each entry of the lower triangle once"), std::string::npos) << msg;
  EXPECT_EQ(read_error("%%MatrixMarket matrix coordinate real symmetric\n4 4 2\n2 1 1\n1 2 1\n").find("given twice"),
            std::string::npos);
}

TEST(MatrixMarketStrict, DirectoryAndBinaryAreToldAsSuch) {
  try {
    read_matrix_market_header("/tmp");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read Matrix Market file '/tmp': it is a directory"), std::string::npos)
        << e.what();
  }
  std::string garbage =
      "\x7f"
      "ELF\x02\x01\x01";
  garbage += std::string(1, '\0') + std::string(300, '\xfe') + "\n";
  const std::string msg = read_error(garbage);
  EXPECT_NE(msg.find("line 1: expected '%%MatrixMarket' banner, found '\\x7FELF\\x02\\x01\\x01\\x00\\xFE"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(printable(msg)) << msg;
  EXPECT_LT(msg.size(), 400u) << msg;
}

// Sizes are checked without overflow (rows * cols wrapped for an array file).
TEST(MatrixMarketStrict, SizesAreChecked) {
  auto header_error = [](const std::string& text) {
    const std::string path = temp_file("header.mtx", text);
    std::string msg = "no error";
    try {
      read_matrix_market_header(path);
    } catch (const InputError& e) {
      msg = e.what();
    }
    std::remove(path.c_str());
    return msg;
  };
  EXPECT_NE(header_error("%%MatrixMarket matrix array real general\n9999999999 9999999999\n")
                .find("line 2: an array of 9999999999 x 9999999999 has more values than plexus can count"),
            std::string::npos);
  EXPECT_NE(header_error("%%MatrixMarket matrix coordinate real general\n4 4 17\n")
                .find("line 2: announces 17 entries, more than the 4 x 4 matrix has elements (16)"),
            std::string::npos);
  EXPECT_NE(header_error("%%MatrixMarket matrix coordinate real symmetric\n4 4 11\n")
                .find("more than the 4 x 4 matrix has in its lower triangle (10)"),
            std::string::npos);
  EXPECT_EQ(header_error("%%MatrixMarket matrix coordinate real general\n1000000000000 1000000000000 2\n"), "no error");
}

// The helpers behind the size checks: overflow is seen, and the memory a process can get respects
// its address-space limit (ulimit -v), which ended runs in a bare std::bad_alloc.
TEST(InputLimits, CheckedArithmeticAndAvailableMemory) {
  EXPECT_EQ(plexus::input::checked_mul(4, 1073741825), std::optional<std::int64_t>(4294967300LL));
  EXPECT_FALSE(plexus::input::checked_mul(9999999999LL, 9999999999LL).has_value());
  EXPECT_FALSE(plexus::input::checked_add(std::numeric_limits<std::int64_t>::max(), 1).has_value());
  const auto free = plexus::input::available_memory();
  EXPECT_GT(free.bytes, 0u);
  EXPECT_FALSE(free.source.empty());

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
  rlimit low = saved;
  std::ifstream status("/proc/self/status");
  std::string line;
  long long vm_kb = 0;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) vm_kb = std::atoll(line.c_str() + 7);
  ASSERT_GT(vm_kb, 0);
  const rlim_t limit = static_cast<rlim_t>(vm_kb) * 1024 + (rlim_t{64} << 20);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < limit) GTEST_SKIP() << "hard limit too low to test";
  low.rlim_cur = limit;
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &low), 0);
  const auto limited = plexus::input::available_memory();
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_LE(limited.bytes, std::uint64_t{64} << 20) << limited.source;
  EXPECT_NE(limited.source.find("ulimit -v"), std::string::npos) << limited.source;
  EXPECT_EQ(plexus::input::format_size(1536.0 * 1024 * 1024), "1.50 GiB");
}
