#include "run/progress.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(RemainingSeconds, NothingToGoOnBeforeTheFirstResultOrWithUncollectedNewFiles) {
  EXPECT_FALSE(remaining_seconds({10, 0, 100, 50, 0, 2, false}));
  EXPECT_FALSE(remaining_seconds({10, 5, 100, 50, 10, 2, true}));
}

TEST(RemainingSeconds, WithoutARecordTheAverageSoFar) {
  // 20 of 100 tests in 40 s: 2 s a test, 80 left.
  EXPECT_DOUBLE_EQ(*remaining_seconds({40, 20, 100, 0, 0, 2, false}), 160);
}

TEST(RemainingSeconds, TheRecordAtTheRecordsPace) {
  // The record says 100 s of tests (50 s on two workers); half of it took 25 s, as expected.
  EXPECT_DOUBLE_EQ(*remaining_seconds({25, 50, 100, 100, 50, 2, false}), 25);
}

TEST(RemainingSeconds, ASlowerPaceScalesTheRecord) {
  // Crashes and process starts: the first 5 s of recorded test time took 100 s on one worker.
  // The record alone would say 5 s left; at the pace seen it is 100 s.
  EXPECT_DOUBLE_EQ(*remaining_seconds({100, 50, 100, 10, 5, 1, false}), 100);
}

TEST(RemainingSeconds, NeverBelowTheAverageTimePerTest) {
  // The record is exhausted (its tests are done) but 30 tests without a record remain.
  EXPECT_DOUBLE_EQ(*remaining_seconds({60, 30, 60, 10, 10, 1, false}), 60);
  // Everything has a result: nothing left by either measure.
  EXPECT_DOUBLE_EQ(*remaining_seconds({60, 60, 60, 10, 10, 1, false}), 0);
}

}  // namespace
}  // namespace ootci
