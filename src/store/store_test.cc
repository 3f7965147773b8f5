// One suite, run against every Store implementation. PostgreSQL runs when OOTCI_TEST_PG_URI is set;
// scripts/test always sets it (it starts a throwaway server), and the suite fails without it there.
#include "store/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "base/error.h"
#include "store/migrations.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { store_ = open_test_store(GetParam()); }
  std::unique_ptr<Store> store_;
};

DeliveryRecord delivery(const std::string& id) {
  return DeliveryRecord{id, "pull_request", "opened", "abc", 2, 1000, R"({"a":1})"};
}

std::vector<OutboxItem> rows(const std::vector<std::string>& repos, int64_t now = 1000) {
  std::vector<OutboxItem> out;
  for (const auto& r : repos) {
    OutboxItem o;
    o.repo = r;
    o.event_type = "pull_request";
    o.callback_token = "tok-" + r;
    o.created_ms = now;
    o.next_attempt_ms = now;
    o.deadline_ms = now + 60000;
    out.push_back(o);
  }
  return out;
}

TEST_P(StoreTest, MigratesToLatestVersion) {
  EXPECT_EQ(store_->schema_version(), static_cast<int>(migrations(SqlDialect::kSqlite).size()));
  EXPECT_EQ(migrations(SqlDialect::kSqlite).size(), migrations(SqlDialect::kPostgres).size());
}

TEST_P(StoreTest, AcceptsOnceAndRejectsRedelivery) {
  EXPECT_TRUE(store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y"})));
  EXPECT_FALSE(store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"})));
  auto items = store_->outbox_for("d1");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].repo, "a/x");
  EXPECT_EQ(items[0].callback_token, "tok-a/x");
  EXPECT_EQ(items[0].status, OutboxStatus::kPending);
  auto d = store_->get_delivery("d1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->body, R"({"a":1})");
  EXPECT_EQ(d->pr_number, 2);
  EXPECT_FALSE(store_->get_delivery("nope"));
}

TEST_P(StoreTest, ClaimLeasesRowsUntilTheLeaseExpires) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y"}));
  auto first = store_->claim_due(1000, 10, 500);
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(store_->claim_due(1200, 10, 500).empty());
  EXPECT_EQ(store_->claim_due(1500, 10, 500).size(), 2u);  // lease over: back in play
}

TEST_P(StoreTest, ClaimHonoursLimitAndDueTime) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}, 5000));
  EXPECT_TRUE(store_->claim_due(4999, 10, 100).empty());
  EXPECT_EQ(store_->claim_due(5000, 2, 100).size(), 2u);
  EXPECT_EQ(store_->claim_due(5000, 2, 100).size(), 1u);
}

TEST_P(StoreTest, DeliveredRetryAndFailedTransitions) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}));
  auto claimed = store_->claim_due(1000, 10, 100000);
  ASSERT_EQ(claimed.size(), 3u);
  store_->mark_delivered(claimed[0].id, 1, 1234);
  store_->mark_retry(claimed[1].id, 1, 3000, "HTTP 503");
  store_->mark_failed(claimed[2].id, 4, "deadline passed: HTTP 500");
  auto items = store_->outbox_for("d1");
  EXPECT_EQ(items[0].status, OutboxStatus::kDelivered);
  EXPECT_EQ(items[0].delivered_ms, 1234);
  EXPECT_EQ(items[1].status, OutboxStatus::kPending);
  EXPECT_EQ(items[1].last_error, "HTTP 503");
  EXPECT_EQ(items[1].next_attempt_ms, 3000);
  EXPECT_EQ(items[2].status, OutboxStatus::kFailed);
  EXPECT_EQ(items[2].attempts, 4);
  auto c = store_->outbox_counts();
  EXPECT_EQ(c.pending, 1);
  EXPECT_EQ(c.delivered, 1);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(store_->next_due_ms(), 3000);
  // Retried row comes back only when due; delivered and failed rows never do.
  EXPECT_TRUE(store_->claim_due(2999, 10, 100).empty());
  auto again = store_->claim_due(3000, 10, 100);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].repo, "b/y");
  EXPECT_EQ(again[0].attempts, 1);
}

TEST_P(StoreTest, ReleaseLeasesMakesLeasedRowsDueNow) {
  store_->accept_delivery(delivery("d1"), rows({"a/x"}));
  ASSERT_EQ(store_->claim_due(1000, 10, 1000000).size(), 1u);
  store_->release_leases(1100);
  EXPECT_EQ(store_->claim_due(1100, 10, 100).size(), 1u);
}

TEST_P(StoreTest, NoDueRowsMeansNoNextDue) {
  EXPECT_FALSE(store_->next_due_ms());
}

TEST_P(StoreTest, ConcurrentClaimsNeverHandOutARowTwice) {
  std::vector<std::string> repos;
  for (int i = 0; i < 200; ++i) repos.push_back("org/r" + std::to_string(i));
  store_->accept_delivery(delivery("d1"), rows(repos));
  std::mutex mu;
  std::multiset<int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (;;) {
        auto got = store_->claim_due(1000, 7, 1000000);
        if (got.empty()) return;
        std::lock_guard lock(mu);
        for (auto& o : got) seen.insert(o.id);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 200u);
}

TEST_P(StoreTest, CheckRunWanted) {
  EXPECT_FALSE(store_->check_run_wanted("sha", "a/x"));
  store_->set_check_run_wanted("sha", "a/x", 1);
  store_->set_check_run_wanted("sha", "a/x", 2);
  EXPECT_TRUE(store_->check_run_wanted("sha", "a/x"));
  EXPECT_FALSE(store_->check_run_wanted("sha", "b/y"));
}

TEST_P(StoreTest, DispatchRecordFindsTheOutboxRowOfDeliveryAndRepo) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y"}, 2000));
  auto all = store_->outbox_for("d1");
  ASSERT_EQ(all.size(), 2u);
  auto r = store_->dispatch_record("d1", "b/y");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, all[1].id);
  EXPECT_EQ(r->delivery_id, "d1");
  EXPECT_EQ(r->repo, "b/y");
  EXPECT_EQ(r->callback_token, "tok-b/y");
  EXPECT_EQ(r->created_ms, 2000);
  EXPECT_EQ(r->deadline_ms, 62000);
  EXPECT_EQ(r->status, OutboxStatus::kPending);
  EXPECT_FALSE(store_->dispatch_record("d1", "c/z"));
  EXPECT_FALSE(store_->dispatch_record("d2", "a/x"));
}

// Every field, so a comparison catches a dropped or swapped column. 31 is JobRecord's field count.
auto job_fields(const JobRecord& j) {
  return std::tie(j.key, j.delivery_id, j.repo, j.run_id, j.run_attempt, j.job_name,
                  j.workflow_name, j.event_type, j.head_sha, j.pr_number, j.level, j.status,
                  j.conclusion, j.dispatched_ms, j.in_progress_ms, j.completed_ms, j.queue_time_ms,
                  j.execution_time_ms, j.in_progress_hash, j.completed_hash, j.tests_passed,
                  j.tests_failed, j.tests_skipped, j.tests_total, j.workflow_url, j.check_run_id,
                  j.artifact_url, j.check_run_created, j.last_body, j.failed_tests_json,
                  j.triage_json);
}
static_assert(std::tuple_size_v<decltype(job_fields(std::declval<JobRecord>()))> == 31);

void expect_same_job(const std::optional<JobRecord>& got, const JobRecord& want) {
  ASSERT_TRUE(got) << want.key;
  EXPECT_TRUE(job_fields(*got) == job_fields(want)) << "stored job differs: " << want.key;
  // Field by field as well, for a readable failure.
  EXPECT_EQ(got->key, want.key);
  EXPECT_EQ(got->status, want.status);
  EXPECT_EQ(got->conclusion, want.conclusion);
  EXPECT_EQ(got->in_progress_ms, want.in_progress_ms);
  EXPECT_EQ(got->completed_ms, want.completed_ms);
  EXPECT_EQ(got->check_run_created, want.check_run_created);
  EXPECT_EQ(got->last_body, want.last_body);
}

// Distinct, non-default values in every field.
JobRecord full_job() {
  JobRecord j;
  j.key = "d1:org/repo:77:2:build (linux)";
  j.delivery_id = "d1";
  j.repo = "org/repo";
  j.run_id = 77;
  j.run_attempt = 2;
  j.job_name = "build (linux)";
  j.workflow_name = "CI";
  j.event_type = "pull_request";
  j.head_sha = "0123abcd";
  j.pr_number = 42;
  j.level = "L2";
  j.status = "in_progress";
  j.conclusion = "neutral";
  j.dispatched_ms = 1001;
  j.in_progress_ms = 1002;
  j.completed_ms = -1;
  j.queue_time_ms = 3;
  j.execution_time_ms = -1;
  j.in_progress_hash = "hash-ip";
  j.completed_hash = "hash-done";
  j.tests_passed = 11;
  j.tests_failed = 12;
  j.tests_skipped = 13;
  j.tests_total = 36;
  j.workflow_url = "https://example.test/run/77";
  j.check_run_id = "9001";
  j.artifact_url = "https://example.test/artifact/5";
  j.check_run_created = true;
  j.last_body = "{\"status\":\"in_progress\",\n \"note\":\"'quoted' \\\\ caf\xc3\xa9\"}";
  j.failed_tests_json = R"([{"name":"t1"}])";
  j.triage_json = R"({"verdict":"flaky"})";
  return j;
}

JobRecord job(const std::string& key, const std::string& sha, const std::string& status,
              int64_t in_progress_ms) {
  JobRecord j;
  j.key = key;
  j.delivery_id = "d1";
  j.repo = "org/repo";
  j.job_name = key;
  j.head_sha = sha;
  j.status = status;
  j.in_progress_ms = in_progress_ms;
  return j;
}

TaskItem task(const std::string& kind, const std::string& key, const std::string& payload,
              int64_t next_ms = 1000) {
  TaskItem t;
  t.kind = kind;
  t.ordering_key = key;
  t.payload = payload;
  t.created_ms = 900;
  t.next_attempt_ms = next_ms;
  return t;
}

std::vector<std::string> payloads(const std::vector<TaskItem>& tasks) {
  std::vector<std::string> out;
  for (const auto& t : tasks) out.push_back(t.payload);
  return out;
}

std::vector<std::string> keys(const std::vector<JobRecord>& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) out.push_back(j.key);
  return out;
}

using Strings = std::vector<std::string>;

TEST_P(StoreTest, InsertJobRoundTripsEveryFieldAndRejectsADuplicateKey) {
  JobRecord j = full_job();
  EXPECT_FALSE(store_->get_job(j.key));
  ASSERT_TRUE(store_->insert_job(j, {task("check_run", j.key, "first")}));
  expect_same_job(store_->get_job(j.key), j);

  // A second insert of the key changes nothing: neither the row nor any task is written.
  JobRecord other = j;
  other.status = "completed";
  other.conclusion = "success";
  other.check_run_created = false;
  EXPECT_FALSE(store_->insert_job(
      other, {task("check_run", j.key, "second"), task("hud", j.key, "second-hud")}));
  expect_same_job(store_->get_job(j.key), j);
  EXPECT_EQ(payloads(store_->tasks_of_kind("check_run")), Strings{"first"});
  EXPECT_TRUE(store_->tasks_of_kind("hud").empty());
  EXPECT_EQ(store_->task_counts().pending, 1);

  // check_run_created=false round-trips too.
  JobRecord plain = job("k2", "sha", "in_progress", 5);
  ASSERT_TRUE(store_->insert_job(plain, {}));
  expect_same_job(store_->get_job("k2"), plain);
  EXPECT_EQ(store_->task_counts().pending, 1);
}

TEST_P(StoreTest, UpdateJobIsACompareAndSetOnStatus) {
  JobRecord j = full_job();
  ASSERT_TRUE(store_->insert_job(j, {}));

  JobRecord done = j;
  done.status = "completed";
  done.conclusion = "success";
  done.completed_ms = 5000;
  done.execution_time_ms = 3998;
  done.completed_hash = "hash-2";
  done.tests_passed = 40;
  done.check_run_created = false;
  done.last_body = "{\"status\":\"completed\"}";
  done.triage_json = "";
  ASSERT_TRUE(store_->update_job(
      done, "in_progress", {task("check_run", j.key, "complete"), task("hud", j.key, "forward")}));
  expect_same_job(store_->get_job(j.key), done);
  EXPECT_EQ(payloads(store_->tasks_of_kind("check_run")), Strings{"complete"});
  EXPECT_EQ(payloads(store_->tasks_of_kind("hud")), Strings{"forward"});

  // The stored status is now "completed": an update expecting "in_progress" writes nothing.
  JobRecord stale = j;
  stale.status = "completed";
  stale.conclusion = "failure";
  stale.last_body = "stale";
  EXPECT_FALSE(store_->update_job(stale, "in_progress", {task("check_run", j.key, "stale")}));
  expect_same_job(store_->get_job(j.key), done);
  EXPECT_EQ(payloads(store_->tasks_of_kind("check_run")), Strings{"complete"});
  EXPECT_EQ(store_->task_counts().pending, 2);

  // Nor does an update of a key that does not exist.
  EXPECT_FALSE(
      store_->update_job(job("nope", "s", "completed", 1), "in_progress", {task("x", "k", "p")}));
  EXPECT_FALSE(store_->get_job("nope"));
  EXPECT_TRUE(store_->tasks_of_kind("x").empty());

  // The matching expectation succeeds again, and may keep the status.
  done.conclusion = "cancelled";
  EXPECT_TRUE(store_->update_job(done, "completed", {}));
  expect_same_job(store_->get_job(j.key), done);
  EXPECT_EQ(store_->task_counts().pending, 2);
}

TEST_P(StoreTest, JobsForShaInKeyOrder) {
  store_->insert_job(job("k-b", "sha1", "in_progress", 1), {});
  store_->insert_job(job("k-a", "sha1", "completed", 2), {});
  store_->insert_job(job("k-c", "sha2", "in_progress", 3), {});
  EXPECT_EQ(keys(store_->jobs_for_sha("sha1")), (Strings{"k-a", "k-b"}));
  EXPECT_EQ(keys(store_->jobs_for_sha("sha2")), Strings{"k-c"});
  EXPECT_TRUE(store_->jobs_for_sha("sha3").empty());
  auto got = store_->jobs_for_sha("sha1");
  EXPECT_EQ(got[0].status, "completed");
  EXPECT_EQ(got[0].in_progress_ms, 2);
}

TEST_P(StoreTest, OverdueJobsOldestFirstBeforeTheCutoffUpToTheLimit) {
  store_->insert_job(job("j300", "s", "in_progress", 300), {});
  store_->insert_job(job("j100", "s", "in_progress", 100), {});
  store_->insert_job(job("j400", "s", "in_progress", 400), {});
  store_->insert_job(job("j200", "s", "in_progress", 200), {});
  store_->insert_job(job("j500", "s", "in_progress", 500), {});
  store_->insert_job(job("done50", "s", "completed", 50), {});  // completed: never overdue
  EXPECT_EQ(keys(store_->overdue_jobs(400, 10)), (Strings{"j100", "j200", "j300"}));
  EXPECT_EQ(keys(store_->overdue_jobs(400, 2)), (Strings{"j100", "j200"}));
  EXPECT_EQ(keys(store_->overdue_jobs(1000, 10)),
            (Strings{"j100", "j200", "j300", "j400", "j500"}));
  EXPECT_TRUE(store_->overdue_jobs(100, 10).empty());  // strictly before the cutoff
  EXPECT_TRUE(store_->overdue_jobs(40, 10).empty());

  // Once completed, a job is no longer overdue.
  JobRecord j = job("j100", "s", "completed", 100);
  ASSERT_TRUE(store_->update_job(j, "in_progress", {}));
  EXPECT_EQ(keys(store_->overdue_jobs(400, 10)), (Strings{"j200", "j300"}));
}

TEST_P(StoreTest, ClaimTasksTakesOnlyTheOldestPendingTaskOfEachKey) {
  store_->enqueue_tasks(
      {task("check_run", "A", "A1"), task("check_run", "A", "A2"), task("hud", "B", "B1")});
  auto first = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(first), (Strings{"A1", "B1"}));
  EXPECT_LT(first[0].id, first[1].id);
  EXPECT_EQ(first[0].kind, "check_run");
  EXPECT_EQ(first[0].ordering_key, "A");
  EXPECT_EQ(first[0].status, "pending");
  EXPECT_EQ(first[0].created_ms, 900);
  EXPECT_EQ(first[0].next_attempt_ms, 1500);  // leased
  EXPECT_EQ(first[1].kind, "hud");

  // A1 is leased, not done: it still blocks A2.
  EXPECT_TRUE(store_->claim_tasks(1000, 10, 500).empty());
  store_->complete_task(first[0].id, 1);
  auto second = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(second), Strings{"A2"});
  EXPECT_GT(second[0].id, first[0].id);
  store_->complete_task(second[0].id, 1);
  store_->complete_task(first[1].id, 1);
  EXPECT_TRUE(store_->claim_tasks(1000000, 10, 500).empty());  // done tasks never come back
}

TEST_P(StoreTest, RetriedTaskWaitsForItsTimeAndKeepsItsKeyBlocked) {
  store_->enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  store_->retry_task(a1[0].id, 1, 3000, "HTTP 502");
  // A1 is not due and A2 is behind it, though A2 is due and A1's lease is gone.
  EXPECT_TRUE(store_->claim_tasks(2000, 10, 500).empty());
  EXPECT_TRUE(store_->claim_tasks(2999, 10, 500).empty());
  auto again = store_->claim_tasks(3000, 10, 500);
  ASSERT_EQ(payloads(again), Strings{"A1"});
  EXPECT_EQ(again[0].id, a1[0].id);
  EXPECT_EQ(again[0].attempts, 1);
  EXPECT_EQ(again[0].last_error, "HTTP 502");
  EXPECT_EQ(again[0].next_attempt_ms, 3500);
  store_->complete_task(a1[0].id, 2);
  auto a2 = store_->claim_tasks(3000, 10, 500);
  ASSERT_EQ(payloads(a2), Strings{"A2"});
  auto all = store_->tasks_of_kind("check_run");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, "done");
  EXPECT_EQ(all[0].attempts, 2);
  EXPECT_EQ(all[0].last_error, "");  // completion clears the retry's error
}

TEST_P(StoreTest, FailedTaskUnblocksItsKey) {
  store_->enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  store_->fail_task(a1[0].id, 5, "HTTP 422: gone");
  EXPECT_EQ(payloads(store_->claim_tasks(1000, 10, 500)), Strings{"A2"});
  auto all = store_->tasks_of_kind("check_run");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, "failed");
  EXPECT_EQ(all[0].attempts, 5);
  EXPECT_EQ(all[0].last_error, "HTTP 422: gone");
  // A failed task is never claimed again: long after, only A2 (its lease expired) comes back.
  EXPECT_EQ(payloads(store_->claim_tasks(1000000, 10, 500)), Strings{"A2"});
}

TEST_P(StoreTest, ExpiredTaskLeaseBringsTheTaskBack) {
  store_->enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  EXPECT_TRUE(store_->claim_tasks(1499, 10, 500).empty());
  auto back = store_->claim_tasks(1500, 10, 500);
  ASSERT_EQ(payloads(back), Strings{"A1"});  // A2 stays behind the crashed worker's A1
  EXPECT_EQ(back[0].id, a1[0].id);
  EXPECT_EQ(back[0].next_attempt_ms, 2000);
}

TEST_P(StoreTest, ClaimTasksHonoursLimitAndDueTime) {
  store_->enqueue_tasks(
      {task("k", "A", "A1", 5000), task("k", "B", "B1", 5000), task("k", "C", "C1", 5000)});
  EXPECT_TRUE(store_->claim_tasks(4999, 10, 100).empty());
  EXPECT_EQ(payloads(store_->claim_tasks(5000, 2, 100)), (Strings{"A1", "B1"}));
  EXPECT_EQ(payloads(store_->claim_tasks(5000, 2, 100)), Strings{"C1"});
}

TEST_P(StoreTest, JobTasksAreClaimable) {
  JobRecord j = job("k1", "s", "in_progress", 1);
  ASSERT_TRUE(store_->insert_job(j, {task("check_run", "k1", "create")}));
  j.status = "completed";
  ASSERT_TRUE(store_->update_job(j, "in_progress", {task("check_run", "k1", "complete")}));
  auto first = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(first), Strings{"create"});
  store_->complete_task(first[0].id, 1);
  EXPECT_EQ(payloads(store_->claim_tasks(1000, 10, 500)), Strings{"complete"});
}

TEST_P(StoreTest, TaskCountsAndTasksOfKind) {
  EXPECT_EQ(store_->task_counts().pending, 0);
  store_->enqueue_tasks({task("check_run", "A", R"({"n":1})"), task("check_run", "B", "2"),
                         task("hud", "C", "3"), task("check_run", "D", "4")});
  store_->enqueue_tasks({});
  auto claimed = store_->claim_tasks(1000, 10, 500);
  ASSERT_EQ(claimed.size(), 4u);
  store_->complete_task(claimed[0].id, 1);
  store_->fail_task(claimed[1].id, 3, "boom");
  store_->retry_task(claimed[2].id, 2, 9000, "later");
  TaskCounts c = store_->task_counts();
  EXPECT_EQ(c.pending, 2);
  EXPECT_EQ(c.done, 1);
  EXPECT_EQ(c.failed, 1);

  auto cr = store_->tasks_of_kind("check_run");
  ASSERT_EQ(payloads(cr), (Strings{R"({"n":1})", "2", "4"}));
  EXPECT_LT(cr[0].id, cr[1].id);
  EXPECT_LT(cr[1].id, cr[2].id);
  EXPECT_EQ(cr[0].status, "done");
  EXPECT_EQ(cr[1].status, "failed");
  EXPECT_EQ(cr[1].last_error, "boom");
  EXPECT_EQ(cr[2].status, "pending");
  EXPECT_EQ(cr[2].ordering_key, "D");
  auto hud = store_->tasks_of_kind("hud");
  ASSERT_EQ(hud.size(), 1u);
  EXPECT_EQ(hud[0].status, "pending");
  EXPECT_EQ(hud[0].attempts, 2);
  EXPECT_EQ(hud[0].next_attempt_ms, 9000);
  EXPECT_EQ(hud[0].last_error, "later");
  EXPECT_TRUE(store_->tasks_of_kind("none").empty());
}

TEST_P(StoreTest, ConcurrentTaskClaimsNeverHandOutATaskTwice) {
  std::vector<TaskItem> tasks;
  for (int i = 0; i < 200; ++i)
    tasks.push_back(task("k", "key" + std::to_string(i), std::to_string(i)));
  store_->enqueue_tasks(tasks);
  std::mutex mu;
  std::multiset<int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (;;) {
        auto got = store_->claim_tasks(1000, 7, 1000000);
        if (got.empty()) return;
        std::lock_guard lock(mu);
        for (auto& o : got) seen.insert(o.id);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 200u);
}

// Four claimers and two concurrent enqueuers on one ordering key: at most one task of the key is
// out at a time, and they go out in id order. A claimer gives its task up (under mu) before
// completing it, so any overlap the store allows shows up as a non-empty `out`.
TEST_P(StoreTest, ConcurrentTaskClaimsRunOneTaskOfAKeyAtATime) {
  constexpr int kPreloaded = 30, kPerEnqueuer = 15, kTotal = kPreloaded + 2 * kPerEnqueuer;
  std::vector<TaskItem> pre;
  for (int i = 0; i < kPreloaded; ++i) pre.push_back(task("k", "shared", "p" + std::to_string(i)));
  store_->enqueue_tasks(pre);

  std::mutex mu;
  std::optional<int64_t> out;
  int64_t last_id = 0;
  int overlaps = 0, out_of_order = 0, multi = 0;
  std::atomic<int> done{0};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::thread> threads;
  for (int e = 0; e < 2; ++e)
    threads.emplace_back([&, e] {
      for (int i = 0; i < kPerEnqueuer; ++i)
        store_->enqueue_tasks(
            {task("k", "shared", "e" + std::to_string(e) + "-" + std::to_string(i))});
    });
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      while (done < kTotal && std::chrono::steady_clock::now() < deadline) {
        auto got = store_->claim_tasks(1000, 5, 1000000);
        if (got.empty()) {
          std::this_thread::yield();
          continue;
        }
        {
          std::lock_guard lock(mu);
          if (got.size() > 1) ++multi;
          if (out) ++overlaps;
          if (got[0].id <= last_id) ++out_of_order;
          last_id = got[0].id;
          out = got[0].id;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mu);
          out.reset();
        }
        for (const auto& t : got) store_->complete_task(t.id, 1);
        done += static_cast<int>(got.size());
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(done, kTotal);
  EXPECT_EQ(multi, 0);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(out_of_order, 0);
  TaskCounts c = store_->task_counts();
  EXPECT_EQ(c.done, kTotal);
  EXPECT_EQ(c.pending, 0);
}

TEST_P(StoreTest, MetaUpserts) {
  EXPECT_FALSE(store_->get_meta("sweeper_heartbeat"));
  store_->set_meta("sweeper_heartbeat", "1000");
  EXPECT_EQ(store_->get_meta("sweeper_heartbeat"), "1000");
  store_->set_meta("sweeper_heartbeat", "2000");
  EXPECT_EQ(store_->get_meta("sweeper_heartbeat"), "2000");
  store_->set_meta("other", "");
  EXPECT_EQ(store_->get_meta("other"), "");
  EXPECT_EQ(store_->get_meta("sweeper_heartbeat"), "2000");
  EXPECT_FALSE(store_->get_meta("missing"));
}

TEST(StoreOpen, RejectsUnknownUri) {
  EXPECT_THROW(open_store("mysql://x"), Error);
}

TEST(StoreOpen, SqliteReopenKeepsData) {
  std::string path = make_temp_dir() + "/reopen.db";
  open_store("sqlite:" + path)->accept_delivery(delivery("d1"), rows({"a/x"}));
  auto again = open_store("sqlite:" + path);
  EXPECT_EQ(again->outbox_for("d1").size(), 1u);
  EXPECT_EQ(again->schema_version(), static_cast<int>(migrations(SqlDialect::kSqlite).size()));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
