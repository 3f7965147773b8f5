#include "job/agent_queue.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "testing/test_env.h"

namespace ootci {
namespace {

AgentJob pr_job(const std::string& delivery, const std::string& key, bool build = true) {
  AgentJob j;
  j.delivery_id = delivery;
  j.event_type = "pull_request";
  j.client_payload = R"({"delivery_id":")" + delivery + "\"}";
  j.supersede_key = key;
  j.should_build = build;
  j.state = build ? JobState::kQueued : JobState::kSkipped;
  j.reason = "test";
  j.received_ms = 1;
  return j;
}

// A queue written before the SQL layer had its tables and no recorded version.
TEST(AgentQueue, AQueueWithoutAVersionUpgradesInPlaceAndKeepsItsJobs) {
  std::string path = make_temp_dir() + "/old.db";
  int64_t id = 0;
  {
    AgentQueue q(path);
    id = q.add(pr_job("d1", "up#2")).first;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // Back to the first schema: no version table, no base_sha.
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE schema_version; ALTER TABLE jobs DROP COLUMN base_sha",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  AgentQueue q(path);
  ASSERT_TRUE(q.get(id));
  EXPECT_EQ(q.get(id)->delivery_id, "d1");
  EXPECT_EQ(q.get(id)->base_sha, "");
  EXPECT_FALSE(q.add(pr_job("d1", "up#2")).second);  // still a redelivery
  auto claimed = q.claim(5);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->id, id);
}

TEST(AgentQueue, AJobKeepsItsPullRequestsBaseSha) {
  AgentQueue q(make_temp_dir() + "/q.db");
  AgentJob job = pr_job("d1", "up#2");
  job.base_sha = std::string(40, 'b');
  int64_t id = q.add(job).first;
  EXPECT_EQ(q.get(id)->base_sha, std::string(40, 'b'));
  EXPECT_EQ(q.claim(2)->base_sha, std::string(40, 'b'));
}

TEST(AgentQueue, RedeliveryIsTheSameJob) {
  AgentQueue q(make_temp_dir() + "/q.db");
  auto [a, inserted_a] = q.add(pr_job("d1", "up#2"));
  auto [b, inserted_b] = q.add(pr_job("d1", "up#2"));
  EXPECT_TRUE(inserted_a);
  EXPECT_FALSE(inserted_b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(q.recent(10).size(), 1u);
}

TEST(AgentQueue, ClaimsOldestFirstAndSkipsSkippedJobs) {
  AgentQueue q(make_temp_dir() + "/q.db");
  q.add(pr_job("skip", "up#1", false));
  auto [first, _] = q.add(pr_job("d1", "up#2"));
  q.add(pr_job("d2", "up#3"));
  auto job = q.claim(100);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->id, first);
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(q.get(first)->started_ms, 100);
  EXPECT_EQ(q.claim(101)->delivery_id, "d2");
  EXPECT_FALSE(q.claim(102));
}

TEST(AgentQueue, SupersedeCancelsQueuedAndReturnsRunningOfTheSameKeyOnly) {
  AgentQueue q(make_temp_dir() + "/q.db");
  auto [running, r0] = q.add(pr_job("d1", "up#2"));
  ASSERT_EQ(q.claim(5)->id, running);
  auto [queued, r1] = q.add(pr_job("d2", "up#2"));
  auto [other, r2] = q.add(pr_job("d3", "up#9"));
  auto [newer, r3] = q.add(pr_job("d4", "up#2"));
  std::vector<int64_t> stop = q.supersede("up#2", newer, 50);
  EXPECT_EQ(stop, std::vector<int64_t>{running});
  EXPECT_EQ(q.get(queued)->state, JobState::kCancelled);
  EXPECT_EQ(q.get(queued)->conclusion, Conclusion::kCancelled);
  EXPECT_EQ(q.get(queued)->error, "superseded by job " + std::to_string(newer));
  EXPECT_EQ(q.get(other)->state, JobState::kQueued);
  EXPECT_EQ(q.get(newer)->state, JobState::kQueued);
  // A finish after the cancel does not resurrect a cancelled job.
  EXPECT_EQ(q.finish(queued, JobState::kDone, Conclusion::kSuccess, "", 60), JobState::kCancelled);
  EXPECT_EQ(q.finish(running, JobState::kCancelled, Conclusion::kCancelled, "", 60),
            JobState::kCancelled);
}

TEST(AgentQueue, RunningJobsGoBackToTheQueueWithWhatTheyHadDone) {
  std::string path = make_temp_dir() + "/q.db";
  int64_t id = 0;
  {
    AgentQueue q(path);
    id = q.add(pr_job("d1", "up#2")).first;
    q.claim(7);
    q.set_run(id, "r-1");
    q.set_in_progress_reported(id);
  }
  AgentQueue reopened(path);  // as after a crash
  EXPECT_EQ(reopened.requeue_running(), 1);
  auto job = reopened.claim(9);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->id, id);
  EXPECT_EQ(job->run_id, "r-1");
  EXPECT_TRUE(job->in_progress_reported);
  EXPECT_EQ(job->started_ms, 7);  // queue time is measured from the first start
  auto counts = reopened.count_by_state();
  EXPECT_EQ(counts["running"], 1);
  EXPECT_EQ(counts["queued"], 0);
}

}  // namespace
}  // namespace ootci
