// gzip-compressed Matrix Market files read as the plain ones: same matrix, same messages.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "input_files.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix_market.hpp"
#include "text_reader.hpp"

using namespace plexus;
using plexus::test::write_gz;
using plexus::test::write_plain;

namespace {
std::shared_ptr<const Distribution> one_rank(const BlockLayout& l) {
  return Distribution::block_cyclic(Grid::create(MPI_COMM_SELF), l.rows.count(), l.cols.count());
}

const BlockLayout kLayout4{BlockSizes::covering(4, 2), BlockSizes::covering(4, 2)};

// The InputError message of reading the file at `path` (header, then the matrix), or "no error".
std::string error_of(const std::string& path) {
  std::string msg = "no error";
  try {
    read_matrix_market_header(path);
    read_matrix_market(path, "M", one_rank(kLayout4), kLayout4);
  } catch (const InputError& e) {
    msg = e.what();
  }
  std::remove(path.c_str());
  return msg;
}

const std::string kSymmetric =
    "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n4 4 5\n1 1 2.5\n3 1 -1\n2 2 4\n4 3 0.125\n"
    "4 4 1e-3";  // no newline at the end
}  // namespace

TEST(CompressedMatrixMarket, GzipReadsAsThePlainFile) {
  const std::string plain = write_plain("plain.mtx", kSymmetric);
  // Told by the magic bytes: one name ends in .gz, the other does not.
  for (const char* name : {"m.mtx.gz", "m_compressed.mtx"}) {
    const std::string gz = write_gz(name, kSymmetric);
    const auto hp = read_matrix_market_header(plain), hg = read_matrix_market_header(gz);
    EXPECT_EQ(hg.rows, 4);
    EXPECT_EQ(hg.entries, hp.entries);
    EXPECT_EQ(hg.symmetry, "symmetric");
    const DistMatrix a = read_matrix_market(plain, "A", one_rank(kLayout4), kLayout4);
    const DistMatrix b = read_matrix_market(gz, "B", one_rank(kLayout4), kLayout4);
    EXPECT_EQ(a.to_dense(), b.to_dense());
    EXPECT_EQ(a.local_nblocks(), b.local_nblocks());
    // The values themselves, column-major: (1,1) 2.5, (3,1) = (1,3) -1, (2,2) 4, (4,3) = (3,4) 0.125, (4,4) 1e-3.
    const std::vector<double> expect{2.5, 0, -1, 0, 0, 4, 0, 0, -1, 0, 0, 0.125, 0, 0, 0.125, 1e-3};
    EXPECT_EQ(b.to_dense(), expect);
    std::remove(gz.c_str());
  }
  // Two gzip members in a row (cat a.gz b.gz), the cut inside a line: one text.
  const std::string first = plexus::test::read_bytes(write_gz("part1.gz", kSymmetric.substr(0, 70)));
  const std::string second = plexus::test::read_bytes(write_gz("part2.gz", kSymmetric.substr(70)));
  std::remove(plexus::test::temp_path("part1.gz").c_str());
  std::remove(plexus::test::temp_path("part2.gz").c_str());
  const std::string joined = write_plain("joined.mtx.gz", first + second);
  EXPECT_EQ(read_matrix_market(joined, "J", one_rank(kLayout4), kLayout4).to_dense(),
            read_matrix_market(plain, "A", one_rank(kLayout4), kLayout4).to_dense());
  std::remove(joined.c_str());
  std::remove(plain.c_str());
}

TEST(CompressedMatrixMarket, MalformedContentsGiveTheSameMessages) {
  const std::string cases[] = {
      "%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 1\n2 2 nan\n",
      "%%MatrixMarket matrix coordinate real general\n% c\n4 4 3\n1 1 1\n2 2 2\n1 1 3\n",
      "%%MatrixMarket matrix coordinate real general\n4 4 3\n1 1 1\n2 2 2\n",
      "hello\n",
      "",
  };
  for (const std::string& text : cases) {
    std::string plain = error_of(write_plain("bad.mtx", text));
    std::string gz = error_of(write_gz("bad.mtx", text));  // the same path: the same message
    EXPECT_NE(plain, "no error") << text;
    EXPECT_EQ(plain, gz) << text;
  }
}

TEST(CompressedMatrixMarket, CorruptGzipNamesFileAndLine) {
  std::string text = "%%MatrixMarket matrix coordinate real general\n4 4 16\n";
  for (int j = 1; j <= 4; ++j)
    for (int i = 1; i <= 4; ++i) text += std::to_string(i) + " " + std::to_string(j) + " 0.5\n";
  const std::string good = plexus::test::read_bytes(write_gz("good.mtx.gz", text));
  std::remove(plexus::test::temp_path("good.mtx.gz").c_str());
  ASSERT_GT(good.size(), 20u);
  ASSERT_EQ(static_cast<unsigned char>(good[0]), 0x1f);
  ASSERT_EQ(static_cast<unsigned char>(good[1]), 0x8b);

  // Cut in the middle of the compressed stream.
  std::string msg = error_of(write_plain("cut.mtx.gz", good.substr(0, good.size() / 2)));
  EXPECT_NE(msg.find("Matrix Market file " + plexus::test::temp_path("cut.mtx.gz") + ", line "), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the gzip data is truncated"), std::string::npos) << msg;

  // The CRC of the trailer (the 8 bytes before the end) does not match the data: every line read,
  // then the error (after the last line, 18).
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 0x5a);
  msg = error_of(write_plain("crc.mtx.gz", bad_crc));
  EXPECT_NE(msg.find("crc.mtx.gz, line 19: the gzip data is corrupt (zlib: incorrect data check)"), std::string::npos)
      << msg;

  // A compression method other than deflate (byte 2) is no gzip zlib can read.
  std::string bad_method = good;
  bad_method[2] = 7;
  msg = error_of(write_plain("method.mtx.gz", bad_method));
  EXPECT_NE(msg.find("method.mtx.gz, line 1: the gzip data is corrupt (zlib: "), std::string::npos) << msg;

  // Bytes after the gzip data that are no second member.
  msg = error_of(write_plain("trailing.mtx.gz", good + "junk"));
  EXPECT_NE(msg.find("trailing.mtx.gz, line 19: the file goes on after the end of its gzip data"), std::string::npos)
      << msg;

  // Only the magic bytes: a gzip header cut short.
  msg = error_of(write_plain("magic.mtx.gz", good.substr(0, 2)));
  EXPECT_NE(msg.find("magic.mtx.gz, line 1: the gzip data is truncated"), std::string::npos) << msg;
}

// The real data: H of 32 water molecules, gzip-compressed, reads as its decompressed text.
TEST(CompressedMatrixMarket, WaterHamiltonianAsDecompressed) {
  const std::string gz = plexus::test::data_file("h2o-32/H.mtx.gz");
  if (gz.empty()) GTEST_SKIP() << "h2o-32/H.mtx.gz not in PLEXUS_TEST_DATA_DIR";
  const std::string plain = write_plain("h2o_H.mtx", plexus::test::gunzip(gz));
  const auto h = read_matrix_market_header(gz);
  EXPECT_EQ(h.rows, 736);
  EXPECT_EQ(h.cols, 736);
  EXPECT_EQ(h.symmetry, "symmetric");
  const BlockLayout layout{BlockSizes::covering(736, 23), BlockSizes::covering(736, 23)};
  const auto dist = one_rank(layout);
  const DistMatrix a = read_matrix_market(gz, "H", dist, layout);
  const DistMatrix b = read_matrix_market(plain, "H", dist, layout);
  const auto da = a.to_dense(), db = b.to_dense();
  EXPECT_EQ(da, db);
  // Symmetric as stored, and a diagonal that is not zero.
  for (int i = 0; i < 736; ++i) {
    EXPECT_NE(da[static_cast<std::size_t>(i * 737)], 0.0);
    for (int j = 0; j < i; ++j)
      ASSERT_EQ(da[static_cast<std::size_t>(i + j * 736)], da[static_cast<std::size_t>(j + i * 736)]);
  }
  std::remove(plain.c_str());
}

// Beyond zlib's first buffer (64 KiB of text) the rest of a gzip file is decompressed whole
// (libdeflate; TextReader): the same lines as the plain file and as zlib alone (whole_limit 0), two
// members joined mid-line included, and again after rewind().
TEST(CompressedText, BeyondTheFirstBufferTheSameLinesAsZlibAlone) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + std::string(static_cast<std::size_t>(i % 13), 'x') + "\n";
  text += "last line, no newline";
  ASSERT_GT(text.size(), std::size_t{3} << 16);
  const std::string plain = write_plain("lines.txt", text);
  const std::string cut = text.substr(0, 100001), rest = text.substr(100001);  // mid-line
  const std::string joined =
      plexus::test::read_bytes(write_gz("lines1.gz", cut)) + plexus::test::read_bytes(write_gz("lines2.gz", rest));
  std::remove(plexus::test::temp_path("lines1.gz").c_str());
  std::remove(plexus::test::temp_path("lines2.gz").c_str());
  const std::string gz = write_gz("lines.gz", text), two = write_plain("lines_two.gz", joined);
  auto lines_of = [](detail::TextReader& in) {
    std::vector<std::string> out;
    for (std::string line; in.getline(line);) out.push_back(line);
    return out;
  };
  // Lines as views (into the buffer, or a copy where a line spans two buffers), as the readers take them.
  auto views_of = [](detail::TextReader& in) {
    std::vector<std::string> out;
    for (std::string_view line; in.getline(line);) out.emplace_back(line);
    return out;
  };
  detail::TextReader p(plain, "text file");
  const std::vector<std::string> expect = lines_of(p);
  ASSERT_EQ(expect.size(), 20001u);
  EXPECT_EQ(expect.back(), "last line, no newline");
  p.rewind();
  EXPECT_EQ(views_of(p), expect);
  for (const std::string& path : {gz, two}) {
    for (const std::size_t limit : {detail::TextReader::kWholeGzipBytes, std::size_t{0}}) {
      SCOPED_TRACE(path + ", whole up to " + std::to_string(limit) + " bytes");
      detail::TextReader in(path, "text file", limit);
      EXPECT_EQ(lines_of(in), expect);
      EXPECT_TRUE(in.compressed());
      EXPECT_EQ(in.whole(), limit > 0);
      in.rewind();
      EXPECT_EQ(views_of(in), expect);
    }
  }
  for (const std::string& path : {plain, gz, two}) std::remove(path.c_str());
}

// Damage beyond the first buffer: libdeflate refuses the file, zlib goes on and names the line.
TEST(CompressedText, DamageBeyondTheFirstBufferNamesTheLine) {
  std::string text;
  for (int i = 0; i < 30000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string good = plexus::test::read_bytes(write_gz("long.gz", text));
  std::remove(plexus::test::temp_path("long.gz").c_str());
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 0x5a);
  const struct {
    std::string name, bytes, message;
  } cases[] = {
      {"long_crc.gz", bad_crc, "line 30001: the gzip data is corrupt (zlib: incorrect data check)"},
      {"long_cut.gz", good.substr(0, good.size() * 3 / 4), ": the gzip data is truncated"},  // inside a line
      {"long_junk.gz", good + "junk", "line 30001: the file goes on after the end of its gzip data"},
  };
  for (const auto& c : cases) {
    const std::string path = write_plain(c.name, c.bytes);
    detail::TextReader in(path, "text file");
    std::string line, message = "no error";
    std::int64_t lines = 0;
    try {
      while (in.getline(line)) ++lines;
    } catch (const InputError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(path + ", line "), std::string::npos) << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_FALSE(in.whole()) << c.name;
    EXPECT_GT(lines, 1000) << c.name;  // the lines before the damage were given
    std::remove(path.c_str());
  }
}
