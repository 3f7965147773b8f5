#include "relay/state_machine.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

JobRecord job(const std::string& status, const std::string& ip_hash, const std::string& c_hash) {
  JobRecord j;
  j.status = *parse_job_status(status);
  j.in_progress_hash = ip_hash;
  j.completed_hash = c_hash;
  return j;
}

TEST(StateMachine, CrcrTransitionsPlusSafeRetries) {
  auto d = [](std::optional<JobRecord> cur, const char* status, const char* hash,
              bool self = false) {
    return decide_transition(cur, *parse_job_status(status), hash, self).transition;
  };
  EXPECT_EQ(d(std::nullopt, "in_progress", "h1"), Transition::kInsert);
  EXPECT_EQ(d(std::nullopt, "completed", "h2"), Transition::kInvalid);       // skipped in_progress
  EXPECT_EQ(d(std::nullopt, "completed", "h2", true), Transition::kInsert);  // nightly
  auto running = job("in_progress", "h1", "");
  EXPECT_EQ(d(running, "in_progress", "h1"), Transition::kDuplicate);
  EXPECT_EQ(d(running, "in_progress", "hX"), Transition::kConflict);
  EXPECT_EQ(d(running, "completed", "h2"), Transition::kUpdate);
  auto done = job("completed", "h1", "h2");
  EXPECT_EQ(d(done, "completed", "h2"), Transition::kDuplicate);
  EXPECT_EQ(d(done, "completed", "hY"), Transition::kConflict);
  EXPECT_EQ(d(done, "in_progress", "h1"), Transition::kDuplicate);  // late retry of in_progress
  EXPECT_EQ(d(done, "in_progress", "hZ"), Transition::kInvalid);    // going backwards
  EXPECT_EQ(transition_http_status(Transition::kConflict), 409);
  EXPECT_EQ(transition_http_status(Transition::kInvalid), 400);
  EXPECT_EQ(transition_http_status(Transition::kDuplicate), 200);
}

}  // namespace
}  // namespace ootci
