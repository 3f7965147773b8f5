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

// A resumed run: 900 of 1,000 tests finished in an earlier process, 50 in this one's 100 s. The
// pace is this process's own; counting the 900 as done in 100 s said 5 s for the last 50.
TEST(RemainingSeconds, AResumedRunsPaceIsTakenFromWhatThisProcessFinished) {
  EXPECT_DOUBLE_EQ(*remaining_seconds({100, 950, 1000, 0, 0, 1, false, 900, 0}), 100);
  // With a record: 900 s of it done before, 50 s of it in this process's 100 s.
  EXPECT_DOUBLE_EQ(*remaining_seconds({100, 950, 1000, 1000, 950, 1, false, 900, 900}), 100);
  // Nothing finished in this process yet: nothing to go on.
  EXPECT_FALSE(remaining_seconds({100, 900, 1000, 1000, 900, 1, false, 900, 900}));
}

TEST(Progress, TestsAResumedRunFinishedBeforeCountButGiveNoPace) {
  Progress progress(false, {{"test/test_a.py::T::one", 1.0}, {"test/test_a.py::T::two", 1.0}}, 1);
  progress.expect_from_history("test/test_a.py");
  TestResult one;
  one.test_id = "test/test_a.py::T::one";
  one.file = "test/test_a.py";
  one.outcome = Outcome::kPassed;
  progress.add_finished({one});
  progress.expect("test/test_a.py", 1);  // the resumed process collects only what is left
  EXPECT_NE(progress.line().find("[1/2] 1 passed"), std::string::npos) << progress.line();
  EXPECT_NE(progress.line().find("ETA ?"), std::string::npos) << progress.line();
}

// Two workers share a new file: each collects its part. Until both have, the file is not known
// (no ETA); then its size is both parts', not the last one's.
TEST(Progress, AFileSharedByWorkersIsKnownOnceEveryPartCollected) {
  Progress progress(false, {}, 2);
  progress.expect_from_history("test/test_new.py");
  progress.expect("test/test_new.py", 60, 1, 2);
  EXPECT_NE(progress.line().find("/60+]"), std::string::npos) << progress.line();
  EXPECT_NE(progress.line().find("ETA ? (first run)"), std::string::npos) << progress.line();
  progress.expect("test/test_new.py", 40, 2, 2);
  EXPECT_NE(progress.line().find("/100]"), std::string::npos) << progress.line();
  EXPECT_EQ(progress.line().find("first run"), std::string::npos) << progress.line();
}

TEST(LongRunningText, NamesTestsRunningOverAMinuteLongestFirstWithTheirLimits) {
  EXPECT_EQ(long_running_text({{"f.py::T::quick", 12, 60}}), "");
  EXPECT_EQ(
      long_running_text(
          {{"f.py::T::quick", 12, 60}, {"f.py::T::slow", 61, 600}, {"f.py::T::hung", 130, 900}}),
      " | running: f.py::T::hung 2m10s (limit 15m00s), f.py::T::slow 1m01s (limit 10m00s)");
  EXPECT_EQ(long_running_text({{"a", 70, 60}, {"b", 80, 60}, {"c", 90, 60}, {"d", 100, 60}}),
            " | running: d 1m40s (limit 1m00s), c 1m30s (limit 1m00s), b 1m20s (limit 1m00s), "
            "+1 more");
}

}  // namespace
}  // namespace ootci
