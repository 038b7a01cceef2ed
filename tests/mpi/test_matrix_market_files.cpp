// Several Matrix Market files read at once (read_matrix_market_files): file f by rank f mod P,
// in a thread of its own, the files' chunks sent in turns; errors in any of them end every rank
// alike.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "matrix_market_files.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/matrix_market.hpp"

using namespace plexus;
using namespace plexus::test_files;

// Several files read at once (H and S): file f by rank f mod P alone, each into its own matrix,
// equal to what the file holds, whatever the chunk; files of different lengths end in different
// turns. Every other rank is given a path that does not exist, so a file opened by the wrong rank
// fails the read.
TEST(MatrixMarketRead, SeveralFilesAtOnceEachReadByItsOwnRank) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const BlockLayout layout{BlockSizes::covering(17, 4), BlockSizes::covering(17, 5)};
  std::vector<Known> known(3);
  const std::vector<std::string> written{
      write_shared("many0.mtx", coordinate_file(17, 17, 0.6, "real", "general", 41, known[0])),
      write_shared("many1.mtx", coordinate_file(17, 17, 0.2, "real", "symmetric", 42, known[1])),
      write_shared("many2.mtx", coordinate_file(17, 17, 0.05, "integer", "general", 43, known[2]))};
  std::vector<std::string> mine;
  for (std::size_t f = 0; f < written.size(); ++f)
    mine.push_back(static_cast<int>(f) % ranks == world_rank() ? written[f] : "/nonexistent-plexus-dir/none.mtx");
  for (const auto& dist : distributions(layout))
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, input::kReadChunkEntries}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", grid " + dist->grid().describe());
      const std::vector<DistMatrix> m = read_matrix_market_files(mine, {"A", "B", "C"}, dist, layout, chunk);
      ASSERT_EQ(m.size(), 3u);
      for (std::size_t f = 0; f < m.size(); ++f) {
        EXPECT_EQ(m[f].name(), std::string(1, static_cast<char>('A' + f)));
        EXPECT_EQ(m[f].to_dense(), known[f].dense) << "file " << f;
        EXPECT_EQ(present_blocks(m[f]), expected_blocks(known[f], layout)) << "file " << f;
      }
    }
  for (const auto& path : written) remove_shared(path);
}

// Files of different shapes at once (a multiply's A and B), each with its own distribution and
// block sizes on one grid; matrices on different grids cannot take turns.
TEST(MatrixMarketRead, FilesOfDifferentShapesAtOnce) {
  Known ka, kb;
  const std::string pa = write_shared("shape_a.mtx", coordinate_file(17, 11, 0.4, "real", "general", 51, ka));
  const std::string pb = write_shared("shape_b.mtx", coordinate_file(11, 13, 0.3, "real", "general", 52, kb));
  const BlockLayout la{BlockSizes::covering(17, 4), BlockSizes::covering(11, 3)};
  const BlockLayout lb{BlockSizes::covering(11, 3), BlockSizes::covering(13, 5)};
  for (const auto& g : test::grids()) {
    SCOPED_TRACE("grid " + g->describe());
    auto da = Distribution::random_permuted(g, la.rows.count(), la.cols.count(), 5);
    auto db = Distribution::block_cyclic(g, lb.rows.count(), lb.cols.count());
    for (const std::size_t chunk : {std::size_t{3}, input::kReadChunkEntries}) {
      const std::vector<DistMatrix> m = read_matrix_market_files({{pa, "A", da, la}, {pb, "B", db, lb}}, chunk);
      ASSERT_EQ(m.size(), 2u);
      EXPECT_EQ(m[0].to_dense(), ka.dense);
      EXPECT_EQ(m[1].to_dense(), kb.dense);
      EXPECT_EQ(present_blocks(m[1]), expected_blocks(kb, lb));
    }
  }
  const auto grids = test::grids();
  if (grids.size() > 1) {
    auto da = Distribution::block_cyclic(grids[0], la.rows.count(), la.cols.count());
    auto db = Distribution::block_cyclic(grids[1], lb.rows.count(), lb.cols.count());
    if (da->grid().comm() != db->grid().comm()) {
      EXPECT_THROW(read_matrix_market_files({{pa, "A", da, la}, {pb, "B", db, lb}}), Error);
    }
  }
  remove_shared(pa);
  remove_shared(pb);
}

// An error in any of several files read at once, in any turn: every rank throws the same
// InputError naming the file and line (the first file's where two fail), none is left waiting.
TEST(MatrixMarketRead, AnErrorInAnyOfSeveralFilesEndsEveryRank) {
  const BlockLayout layout{BlockSizes::covering(8, 3), BlockSizes::covering(8, 3)};
  std::string good = "%%MatrixMarket matrix coordinate real general\n8 8 20\n";
  for (int q = 0; q < 20; ++q) good += std::to_string(q % 8 + 1) + " " + std::to_string(q / 8 + 1) + " 1.5\n";
  const std::string late_bad = good.substr(0, good.rfind("4 3 1.5")) + "4 3 x\n";  // line 22 of 22
  const std::string early_bad = "%%MatrixMarket matrix coordinate real general\n8 8 20\n1 1 y\n";
  std::string twice = good + "1 1 2.5\n";  // (1, 1) on lines 3 and 23
  twice.replace(twice.find("8 8 20"), 6, "8 8 21");
  const std::string good_path = write_shared("good.mtx", good), late_path = write_shared("late.mtx", late_bad),
                    early_path = write_shared("early.mtx", early_bad), twice_path = write_shared("twice.mtx", twice);
  auto dist = Distribution::random_permuted(Grid::create(MPI_COMM_WORLD), 3, 3, 3);
  auto message = [&](const std::vector<std::string>& paths, std::size_t chunk) {
    std::string msg = "no error";
    try {
      read_matrix_market_files(paths, std::vector<std::string>(paths.size(), "M"), dist, layout, chunk);
    } catch (const InputError& e) {
      msg = e.what();
    }
    EXPECT_TRUE(same_on_every_rank(msg)) << msg;
    return msg;
  };
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{4}, input::kReadChunkEntries}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    std::string msg = message({good_path, late_path}, chunk);
    EXPECT_NE(msg.find(late_path + ", line 22: 'x' is not a number"), std::string::npos) << msg;
    msg = message({late_path, good_path}, chunk);
    EXPECT_NE(msg.find(late_path + ", line 22: 'x' is not a number"), std::string::npos) << msg;
    // Both fail: the error of the first file in the turn where one fails first.
    msg = message({good_path, early_path, late_path}, chunk);
    EXPECT_NE(msg.find(early_path + ", line 3: 'y' is not a number"), std::string::npos) << msg;
    msg = message({good_path, twice_path}, chunk);
    EXPECT_NE(msg.find(twice_path + ", line 23: entry (1, 1) is given twice, at lines 3 and 23"), std::string::npos)
        << msg;
    msg = message({good_path, "/nonexistent-plexus-dir/x.mtx"}, chunk);
    EXPECT_NE(msg.find("/nonexistent-plexus-dir/x.mtx"), std::string::npos) << msg;
  }
  for (const auto& path : {good_path, late_path, early_path, twice_path}) remove_shared(path);
}
