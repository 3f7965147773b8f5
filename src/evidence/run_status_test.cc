#include "evidence/run_status.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(RunStatus, TextBothWays) {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kInterrupted})
    EXPECT_EQ(parse_run_status(to_string(s)), s);
  EXPECT_EQ(to_string(RunStatus::kInterrupted), "interrupted");
  EXPECT_EQ(parse_run_status("Finished"), std::nullopt);  // the store's words, exactly
  EXPECT_EQ(parse_run_status(""), std::nullopt);
}

TEST(Conclusion, GitHubsWordsBothWays) {
  EXPECT_EQ(conclusion_names(),
            "success, failure, cancelled, timed_out, neutral, skipped, action_required, stale");
  EXPECT_EQ(parse_conclusion("timed_out"), Conclusion::kTimedOut);
  EXPECT_EQ(to_string(Conclusion::kActionRequired), "action_required");
  EXPECT_EQ(parse_conclusion("succeeded"), std::nullopt);
  EXPECT_EQ(to_string(std::optional<Conclusion>()), "");  // not concluded
  EXPECT_EQ(to_string(std::optional<Conclusion>(Conclusion::kFailure)), "failure");
}

}  // namespace
}  // namespace ootci
