#include <gtest/gtest.h>

#include "plexus/memory.hpp"

using namespace plexus;

TEST(Memory, TracksCurrentAndPeakPerCategory) {
  using memory::Category;
  const auto base = memory::current(Category::Solver);
  memory::reset_peak(Category::Solver);
  {
    SolverArray<double> a(1000);
    EXPECT_EQ(memory::current(Category::Solver), base + 8000);
    {
      SolverArray<double> b(500);
      EXPECT_EQ(memory::current(Category::Solver), base + 12000);
    }
    EXPECT_EQ(memory::current(Category::Solver), base + 8000);
  }
  EXPECT_EQ(memory::current(Category::Solver), base);
  EXPECT_EQ(memory::peak(Category::Solver), base + 12000);
  memory::reset_peak(Category::Solver);
  EXPECT_EQ(memory::peak(Category::Solver), base);
}
