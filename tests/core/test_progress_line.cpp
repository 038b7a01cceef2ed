// The progress line's text, fraction done and timing rule (plexus/progress.hpp); the lines a run
// prints are checked end to end in tests/app (app_progress_*).
#include <gtest/gtest.h>

#include <vector>

#include "plexus/progress.hpp"

using plexus::progress::fraction_done;
using plexus::progress::line_due;
using plexus::progress::line_text;
using plexus::progress::StageState;

TEST(ProgressLine, FractionOfNestedStages) {
  // Round 2 of 4 is running (1 done), in it combination 3 of 4 (2 done), in it multiply 2 of 10.
  const std::vector<StageState> s{{"round", 4, 1}, {"combination", 4, 2}, {"multiply", 10, 1}};
  EXPECT_DOUBLE_EQ(fraction_done(s), (1 + (2 + 1.0 / 10) / 4) / 4);
  EXPECT_DOUBLE_EQ(fraction_done({{"round", 4, 4}}), 1.0);
  EXPECT_DOUBLE_EQ(fraction_done({{"round", 4, 9}}), 1.0);  // more done than total: capped
}

TEST(ProgressLine, UnknownTotals) {
  // An inner stage of unknown total (iterations until converged) adds nothing; an outer one gives
  // no fraction at all.
  EXPECT_DOUBLE_EQ(fraction_done({{"solver run", 2, 1}, {"sign iteration", 0, 7}}), 0.5);
  EXPECT_EQ(fraction_done({{"cg_bands sweep", 0, 3}}), -1);
  EXPECT_EQ(fraction_done({}), -1);
}

TEST(ProgressLine, Text) {
  EXPECT_EQ(line_text({{"round", 4, 1}, {"multiply", 10, 5}}, 30),
            "round 2/4 > multiply 6/10: 37%, 30 s elapsed, about 50 s left");
  // Unknown totals: the step only, and no estimate.
  EXPECT_EQ(line_text({{"sign iteration", 0, 11}}, 75), "sign iteration 12: 1 min 15 s elapsed");
  // Nothing done yet: no estimate; hours.
  EXPECT_EQ(line_text({{"solver run", 3, 0}}, 3725), "solver run 1/3: 0%, 1 h 02 min elapsed");
  // The last step of a stage is numbered as the last, not one beyond.
  EXPECT_EQ(line_text({{"round", 2, 2}}, 4), "round 2/2: 100%, 4 s elapsed");
}

TEST(ProgressLine, DueAfterTwoSecondsThenAtIntervals) {
  EXPECT_FALSE(line_due(1.9, -1, false));
  EXPECT_FALSE(line_due(1.9, -1, true));
  EXPECT_TRUE(line_due(2.0, -1, false));
  // Plain lines (a file, a pipe, mpiexec): at most one every 5 s.
  EXPECT_FALSE(line_due(6.0, 4.9, false));
  EXPECT_TRUE(line_due(7.0, 5.0, false));
  // A bar on a terminal: at most 5 times a second.
  EXPECT_FALSE(line_due(6.0, 0.1, true));
  EXPECT_TRUE(line_due(6.0, 0.2, true));
}
