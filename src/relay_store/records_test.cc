#include "relay_store/records.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

// The four words the relay counts are kinds; any other text is passed on as it came, never
// counted as one of them.
TEST(JobConclusion, TheCountedWordsAreKindsAndOtherTextIsKeptAsItCame) {
  struct Case {
    const char* text;
    JobConclusion::Kind kind;
  } cases[] = {{"success", JobConclusion::kSuccess},
               {"failure", JobConclusion::kFailure},
               {"timed_out", JobConclusion::kTimedOut},
               {"cancelled", JobConclusion::kCancelled},
               {"", JobConclusion::kNone},
               {"startup_failure", JobConclusion::kOther},
               {"Success", JobConclusion::kOther},
               {"neutral", JobConclusion::kOther}};
  for (const Case& c : cases) {
    JobConclusion parsed = JobConclusion::parse(c.text);
    EXPECT_EQ(parsed.kind(), c.kind) << c.text;
    EXPECT_EQ(parsed.text(), c.text);
  }
  EXPECT_EQ(JobConclusion(JobConclusion::kTimedOut).text(), "timed_out");
  EXPECT_EQ(JobConclusion(JobConclusion::kTimedOut), JobConclusion::parse("timed_out"));
  EXPECT_NE(JobConclusion::parse("skipped"), JobConclusion::parse("neutral"));
}

// A high-confidence upstream verdict on a failure is left out of the verdict-aware pass rate;
// the same verdict on another conclusion is not a failure to leave out.
TEST(JobConclusion, OnlyAFailureIsUpstreamCaused) {
  JobRecord j;
  j.verdict_category = "upstream";
  j.verdict_confidence = "high";
  j.conclusion = JobConclusion::kFailure;
  EXPECT_TRUE(upstream_caused(j));
  j.conclusion = JobConclusion::parse("startup_failure");
  EXPECT_FALSE(upstream_caused(j));
}

}  // namespace
}  // namespace ootci
