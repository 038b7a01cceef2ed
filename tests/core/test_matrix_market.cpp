#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dense_reference.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
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
