#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>

#include "plexus/distribution.hpp"
#include "plexus/generator.hpp"

using namespace plexus;

TEST(Generator, DeterministicAndSymmetric) {
  GeneratorSpec s;
  s.occupancy = 0.3;
  s.symmetric = true;
  s.seed = 42;
  int present = 0;
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 40; ++j) {
      EXPECT_EQ(generator_block_present(s, i, j), generator_block_present(s, j, i));
      present += generator_block_present(s, i, j);
    }
  // Occupancy is a probability: 1600 draws at p = 0.3 stay well inside [0.2, 0.4].
  EXPECT_GT(present, 320);
  EXPECT_LT(present, 640);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 7; ++c) {
      EXPECT_EQ(generator_value(s, 3, 8, r, c, 5, 7), generator_value(s, 8, 3, c, r, 7, 5));
      EXPECT_EQ(generator_value(s, 4, 4, r, c, 7, 7), generator_value(s, 4, 4, c, r, 7, 7));
    }
  GeneratorSpec other = s;
  other.seed = 43;
  EXPECT_NE(generator_value(s, 1, 2, 0, 0, 3, 3), generator_value(other, 1, 2, 0, 0, 3, 3));
}

TEST(Generator, MatrixMatchesDefinition) {
  auto grid = Grid::create(MPI_COMM_SELF);
  BlockLayout layout{BlockSizes::cyclic(9, {1, 5, 13}), BlockSizes::cyclic(9, {1, 5, 13})};
  auto dist = Distribution::block_cyclic(grid, 9, 9);
  GeneratorSpec s;
  s.occupancy = 0.4;
  s.force_diagonal = true;
  s.seed = 5;
  DistMatrix m = generate_random("A", dist, layout, s);
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 9; ++j) {
      const double* b = m.get_block(i, j);
      ASSERT_EQ(b != nullptr, generator_block_present(s, i, j) || i == j) << i << "," << j;
      if (!b) continue;
      const int mi = layout.rows.size(i), nj = layout.cols.size(j);
      for (int c = 0; c < nj; ++c)
        for (int r = 0; r < mi; ++r) ASSERT_EQ(b[r + c * mi], generator_value(s, i, j, r, c, mi, nj));
    }
}

TEST(Generator, BandwidthKeepsBlocksNearTheDiagonal) {
  GeneratorSpec s;
  s.occupancy = 0.5;
  s.symmetric = true;
  s.bandwidth = 3;
  s.seed = 9;
  int inside = 0, present = 0;
  for (int i = 0; i < 60; ++i)
    for (int j = 0; j < 60; ++j) {
      const bool p = generator_block_present(s, i, j);
      if (std::abs(i - j) > 3) {
        EXPECT_FALSE(p) << i << "," << j;
      } else {
        ++inside;
        present += p;
      }
      EXPECT_EQ(p, generator_block_present(s, j, i));
    }
  // Occupancy is the probability inside the band: 354 draws at p = 0.5.
  EXPECT_GT(present, inside * 3 / 10);
  EXPECT_LT(present, inside * 7 / 10);
}
