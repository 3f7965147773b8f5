// One suite, run against every Store implementation. PostgreSQL runs when OOTCI_TEST_PG_URI is set;
// scripts/test always sets it (it starts a throwaway server), and the suite fails without it there.
#include "relay_store/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <thread>
#include <tuple>

#include "base/error.h"
#include "relay_store/hud_rollup.h"
#include "relay_store/migrations.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

// One outcome each, settled alone, as a worker whose batch holds one row.
bool mark_delivered(Store& s, const OutboxItem& leased, int attempts, int64_t now_ms) {
  return s.outbox.settle_outbox({{OutboxOutcome::kDelivered, leased, attempts, now_ms, ""}})[0];
}
bool mark_retry(Store& s, const OutboxItem& leased, int attempts, int64_t next_ms,
                const std::string& error) {
  return s.outbox.settle_outbox({{OutboxOutcome::kRetry, leased, attempts, next_ms, error}})[0];
}
bool mark_failed(Store& s, const OutboxItem& leased, int attempts, const std::string& error) {
  return s.outbox.settle_outbox({{OutboxOutcome::kFailed, leased, attempts, 0, error}})[0];
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uri_ = fresh_store_uri(GetParam());
    store_ = open_store(uri_);
  }
  std::string uri_;
  std::unique_ptr<Store> store_;
};

using SqlRows = std::vector<std::vector<std::string>>;

// Runs `sql` (one or more statements) straight on the database behind a store URI from
// fresh_store_uri, for what the store's areas neither set up nor show. Returns the last
// statement's rows as text; NULL reads as "".
SqlRows raw_sql(const std::string& uri, const std::string& sql) {
  SqlRows out;
  if (uri.rfind("sqlite:", 0) == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open(uri.substr(7).c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      throw Error("cannot open " + uri);
    }
    char* err = nullptr;
    int rc = sqlite3_exec(
        db, sql.c_str(),
        [](void* rows, int n, char** values, char**) {
          auto& r = static_cast<SqlRows*>(rows)->emplace_back();
          for (int i = 0; i < n; ++i) r.emplace_back(values[i] ? values[i] : "");
          return 0;
        },
        &out, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    if (rc != SQLITE_OK) throw Error("sqlite: " + msg);
    return out;
  }
  pqxx::connection c(uri);
  pqxx::work w(c);
  for (const auto& row : w.exec(sql)) {
    auto& r = out.emplace_back();
    for (const auto& f : row) r.emplace_back(f.is_null() ? "" : f.as<std::string>());
  }
  w.commit();
  return out;
}

DeliveryRecord delivery(const std::string& id) {
  return DeliveryRecord{id, "pull_request", "opened", "abc", 2, 1000, R"({"a":1})", {}};
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
  EXPECT_EQ(store_->schema_version(),
            static_cast<int>(relay_schema(SqlDialect::kSqlite).steps.size()));
  EXPECT_EQ(relay_schema(SqlDialect::kSqlite).steps.size(),
            relay_schema(SqlDialect::kPostgres).steps.size());
}

TEST_P(StoreTest, AcceptsOnceAndRejectsRedelivery) {
  EXPECT_TRUE(store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y"})));
  EXPECT_FALSE(store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"})));
  auto items = store_->outbox.outbox_for("d1");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].repo, "a/x");
  EXPECT_EQ(items[0].callback_token, "tok-a/x");
  EXPECT_EQ(items[0].status, OutboxStatus::kPending);
  auto d = store_->outbox.get_delivery("d1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->body, R"({"a":1})");
  EXPECT_EQ(d->pr_number, 2);
  EXPECT_FALSE(store_->outbox.get_delivery("nope"));
}

TEST_P(StoreTest, ClaimLeasesRowsUntilTheLeaseExpires) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y"}));
  auto first = store_->outbox.claim_due(1000, 10, 500);
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(store_->outbox.claim_due(1200, 10, 500).empty());
  EXPECT_EQ(store_->outbox.claim_due(1500, 10, 500).size(), 2u);  // lease over: back in play
}

TEST_P(StoreTest, ClaimHonoursLimitAndDueTime) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}, 5000));
  EXPECT_TRUE(store_->outbox.claim_due(4999, 10, 100).empty());
  EXPECT_EQ(store_->outbox.claim_due(5000, 2, 100).size(), 2u);
  EXPECT_EQ(store_->outbox.claim_due(5000, 2, 100).size(), 1u);
}

TEST_P(StoreTest, DeliveredRetryAndFailedTransitions) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}));
  auto claimed = store_->outbox.claim_due(1000, 10, 100000);
  ASSERT_EQ(claimed.size(), 3u);
  mark_delivered(*store_, claimed[0], 1, 1234);
  mark_retry(*store_, claimed[1], 1, 3000, "HTTP 503");
  mark_failed(*store_, claimed[2], 4, "deadline passed: HTTP 500");
  auto items = store_->outbox.outbox_for("d1");
  EXPECT_EQ(items[0].status, OutboxStatus::kDelivered);
  EXPECT_EQ(items[0].delivered_ms, 1234);
  EXPECT_EQ(items[1].status, OutboxStatus::kPending);
  EXPECT_EQ(items[1].last_error, "HTTP 503");
  EXPECT_EQ(items[1].next_attempt_ms, 3000);
  EXPECT_EQ(items[2].status, OutboxStatus::kFailed);
  EXPECT_EQ(items[2].attempts, 4);
  auto c = store_->outbox.outbox_counts();
  EXPECT_EQ(c.pending, 1);
  EXPECT_EQ(c.delivered, 1);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(store_->outbox.next_due_ms(), 3000);
  // Retried row comes back only when due; delivered and failed rows never do.
  EXPECT_TRUE(store_->outbox.claim_due(2999, 10, 100).empty());
  auto again = store_->outbox.claim_due(3000, 10, 100);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].repo, "b/y");
  EXPECT_EQ(again[0].attempts, 1);
}

TEST_P(StoreTest, ReleaseLeasesMakesLeasedRowsDueNow) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x"}));
  ASSERT_EQ(store_->outbox.claim_due(1000, 10, 1000000).size(), 1u);
  store_->outbox.release_leases(1100);
  EXPECT_EQ(store_->outbox.claim_due(1100, 10, 100).size(), 1u);
}

TEST_P(StoreTest, NoDueRowsMeansNoNextDue) {
  EXPECT_FALSE(store_->outbox.next_due_ms());
}

// Claims from four threads until nothing is left; every id handed out, repeats included.
template <typename Claim>
std::multiset<int64_t> claim_from_four_threads(Claim claim) {
  std::mutex mu;
  std::multiset<int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (;;) {
        auto got = claim();
        if (got.empty()) return;
        std::lock_guard lock(mu);
        for (auto& o : got) seen.insert(o.id);
      }
    });
  for (auto& t : threads) t.join();
  return seen;
}

TEST_P(StoreTest, ConcurrentClaimsNeverHandOutARowTwice) {
  std::vector<std::string> repos;
  for (int i = 0; i < 200; ++i) repos.push_back("org/r" + std::to_string(i));
  store_->outbox.accept_delivery(delivery("d1"), rows(repos));
  std::multiset<int64_t> seen =
      claim_from_four_threads([&] { return store_->outbox.claim_due(1000, 7, 1000000); });
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 200u);
}

TEST_P(StoreTest, CheckRunWanted) {
  EXPECT_FALSE(store_->outbox.check_run_wanted("sha", "a/x"));
  store_->outbox.set_check_run_wanted("sha", "a/x", 1);
  store_->outbox.set_check_run_wanted("sha", "a/x", 2);
  EXPECT_TRUE(store_->outbox.check_run_wanted("sha", "a/x"));
  EXPECT_FALSE(store_->outbox.check_run_wanted("sha", "b/y"));
}

TEST_P(StoreTest, DispatchRecordFindsTheOutboxRowOfDeliveryAndRepo) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y"}, 2000));
  auto all = store_->outbox.outbox_for("d1");
  ASSERT_EQ(all.size(), 2u);
  auto r = store_->outbox.dispatch_record("d1", "b/y");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, all[1].id);
  EXPECT_EQ(r->delivery_id, "d1");
  EXPECT_EQ(r->repo, "b/y");
  EXPECT_EQ(r->callback_token, "tok-b/y");
  EXPECT_EQ(r->created_ms, 2000);
  EXPECT_EQ(r->deadline_ms, 62000);
  EXPECT_EQ(r->status, OutboxStatus::kPending);
  EXPECT_FALSE(store_->outbox.dispatch_record("d1", "c/z"));
  EXPECT_FALSE(store_->outbox.dispatch_record("d2", "a/x"));
}

// Every field, so a comparison catches a dropped or swapped column. 32 is JobRecord's field count.
auto job_fields(const JobRecord& j) {
  return std::tie(j.key, j.delivery_id, j.repo, j.run_id, j.run_attempt, j.job_name,
                  j.workflow_name, j.event_type, j.head_sha, j.pr_number, j.level, j.status,
                  j.conclusion, j.dispatched_ms, j.in_progress_ms, j.completed_ms, j.queue_time_ms,
                  j.execution_time_ms, j.in_progress_hash, j.completed_hash, j.tests_passed,
                  j.tests_failed, j.tests_skipped, j.tests_total, j.workflow_url, j.check_run_id,
                  j.artifact_url, j.check_run_created, j.last_body, j.failed_tests_json,
                  j.triage_json, j.created_ms);
}
static_assert(std::tuple_size_v<decltype(job_fields(std::declval<JobRecord>()))> == 32);

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
  EXPECT_EQ(got->created_ms, want.created_ms);
}

// Distinct, non-default values in every field.
JobRecord full_job() {
  JobRecord j;
  j.key = "d1:org/repo:77:2:build (linux)";
  j.delivery_id = "d1";
  j.repo = "org/repo";
  j.run_id = "77";
  j.run_attempt = 2;
  j.job_name = "build (linux)";
  j.workflow_name = "CI";
  j.event_type = "pull_request";
  j.head_sha = "0123abcd";
  j.pr_number = 42;
  j.level = "L2";
  j.status = JobStatus::kInProgress;
  j.conclusion = JobConclusion::parse("neutral");  // a word the relay passes on as it came
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
  j.created_ms = 1700000000123;
  return j;
}

JobRecord job(const std::string& key, const std::string& sha, JobStatus status,
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
  EXPECT_FALSE(store_->jobs.get_job(j.key));
  ASSERT_TRUE(store_->jobs.insert_job(j, {task("check_run", j.key, "first")}));
  expect_same_job(store_->jobs.get_job(j.key), j);

  // A second insert of the key changes nothing: neither the row nor any task is written.
  JobRecord other = j;
  other.status = JobStatus::kCompleted;
  other.conclusion = JobConclusion::kSuccess;
  other.check_run_created = false;
  EXPECT_FALSE(store_->jobs.insert_job(
      other, {task("check_run", j.key, "second"), task("hud", j.key, "second-hud")}));
  expect_same_job(store_->jobs.get_job(j.key), j);
  EXPECT_EQ(payloads(store_->tasks.tasks_of_kind("check_run")), Strings{"first"});
  EXPECT_TRUE(store_->tasks.tasks_of_kind("hud").empty());
  EXPECT_EQ(store_->tasks.task_counts().pending, 1);

  // check_run_created=false round-trips too.
  JobRecord plain = job("k2", "sha", JobStatus::kInProgress, 5);
  ASSERT_TRUE(store_->jobs.insert_job(plain, {}));
  expect_same_job(store_->jobs.get_job("k2"), plain);
  EXPECT_EQ(store_->tasks.task_counts().pending, 1);
}

TEST_P(StoreTest, UpdateJobIsACompareAndSetOnStatus) {
  JobRecord j = full_job();
  ASSERT_TRUE(store_->jobs.insert_job(j, {}));

  JobRecord done = j;
  done.status = JobStatus::kCompleted;
  done.conclusion = JobConclusion::kSuccess;
  done.completed_ms = 5000;
  done.execution_time_ms = 3998;
  done.completed_hash = "hash-2";
  done.tests_passed = 40;
  done.check_run_created = false;
  done.last_body = "{\"status\":\"completed\"}";
  done.triage_json = "";
  done.created_ms = 1700000000999;  // update_job writes every column, created_ms too
  ASSERT_TRUE(store_->jobs.update_job(
      done, JobStatus::kInProgress,
      {task("check_run", j.key, "complete"), task("hud", j.key, "forward")}));
  expect_same_job(store_->jobs.get_job(j.key), done);
  EXPECT_EQ(payloads(store_->tasks.tasks_of_kind("check_run")), Strings{"complete"});
  EXPECT_EQ(payloads(store_->tasks.tasks_of_kind("hud")), Strings{"forward"});

  // The stored status is now "completed": an update expecting "in_progress" writes nothing.
  JobRecord stale = j;
  stale.status = JobStatus::kCompleted;
  stale.conclusion = JobConclusion::kFailure;
  stale.last_body = "stale";
  EXPECT_FALSE(
      store_->jobs.update_job(stale, JobStatus::kInProgress, {task("check_run", j.key, "stale")}));
  expect_same_job(store_->jobs.get_job(j.key), done);
  EXPECT_EQ(payloads(store_->tasks.tasks_of_kind("check_run")), Strings{"complete"});
  EXPECT_EQ(store_->tasks.task_counts().pending, 2);

  // Nor does an update of a key that does not exist.
  EXPECT_FALSE(store_->jobs.update_job(job("nope", "s", JobStatus::kCompleted, 1),
                                       JobStatus::kInProgress, {task("x", "k", "p")}));
  EXPECT_FALSE(store_->jobs.get_job("nope"));
  EXPECT_TRUE(store_->tasks.tasks_of_kind("x").empty());

  // The matching expectation succeeds again, and may keep the status.
  done.conclusion = JobConclusion::kCancelled;
  EXPECT_TRUE(store_->jobs.update_job(done, JobStatus::kCompleted, {}));
  expect_same_job(store_->jobs.get_job(j.key), done);
  EXPECT_EQ(store_->tasks.task_counts().pending, 2);
}

TEST_P(StoreTest, JobsForShaInKeyOrder) {
  store_->jobs.insert_job(job("k-b", "sha1", JobStatus::kInProgress, 1), {});
  store_->jobs.insert_job(job("k-a", "sha1", JobStatus::kCompleted, 2), {});
  store_->jobs.insert_job(job("k-c", "sha2", JobStatus::kInProgress, 3), {});
  EXPECT_EQ(keys(store_->jobs.jobs_for_sha("sha1")), (Strings{"k-a", "k-b"}));
  EXPECT_EQ(keys(store_->jobs.jobs_for_sha("sha2")), Strings{"k-c"});
  EXPECT_TRUE(store_->jobs.jobs_for_sha("sha3").empty());
  auto got = store_->jobs.jobs_for_sha("sha1");
  EXPECT_EQ(got[0].status, JobStatus::kCompleted);
  EXPECT_EQ(got[0].in_progress_ms, 2);
}

TEST_P(StoreTest, OverdueJobsOldestFirstBeforeTheCutoffUpToTheLimit) {
  store_->jobs.insert_job(job("j300", "s", JobStatus::kInProgress, 300), {});
  store_->jobs.insert_job(job("j100", "s", JobStatus::kInProgress, 100), {});
  store_->jobs.insert_job(job("j400", "s", JobStatus::kInProgress, 400), {});
  store_->jobs.insert_job(job("j200", "s", JobStatus::kInProgress, 200), {});
  store_->jobs.insert_job(job("j500", "s", JobStatus::kInProgress, 500), {});
  store_->jobs.insert_job(job("done50", "s", JobStatus::kCompleted, 50),
                          {});  // completed: never overdue
  EXPECT_EQ(keys(store_->jobs.overdue_jobs(400, 10)), (Strings{"j100", "j200", "j300"}));
  EXPECT_EQ(keys(store_->jobs.overdue_jobs(400, 2)), (Strings{"j100", "j200"}));
  EXPECT_EQ(keys(store_->jobs.overdue_jobs(1000, 10)),
            (Strings{"j100", "j200", "j300", "j400", "j500"}));
  EXPECT_TRUE(store_->jobs.overdue_jobs(100, 10).empty());  // strictly before the cutoff
  EXPECT_TRUE(store_->jobs.overdue_jobs(40, 10).empty());

  // Once completed, a job is no longer overdue.
  JobRecord j = job("j100", "s", JobStatus::kCompleted, 100);
  ASSERT_TRUE(store_->jobs.update_job(j, JobStatus::kInProgress, {}));
  EXPECT_EQ(keys(store_->jobs.overdue_jobs(400, 10)), (Strings{"j200", "j300"}));
}

TEST_P(StoreTest, ClaimTasksTakesOnlyTheOldestPendingTaskOfEachKey) {
  store_->tasks.enqueue_tasks(
      {task("check_run", "A", "A1"), task("check_run", "A", "A2"), task("hud", "B", "B1")});
  auto first = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(first), (Strings{"A1", "B1"}));
  EXPECT_LT(first[0].id, first[1].id);
  EXPECT_EQ(first[0].kind, "check_run");
  EXPECT_EQ(first[0].ordering_key, "A");
  EXPECT_EQ(first[0].status, TaskStatus::kPending);
  EXPECT_EQ(first[0].created_ms, 900);
  EXPECT_EQ(first[0].next_attempt_ms, 1500);  // leased
  EXPECT_EQ(first[1].kind, "hud");

  // A1 is leased, not done: it still blocks A2.
  EXPECT_TRUE(store_->tasks.claim_tasks(1000, 10, 500).empty());
  store_->tasks.complete_task(first[0], 1);
  auto second = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(second), Strings{"A2"});
  EXPECT_GT(second[0].id, first[0].id);
  store_->tasks.complete_task(second[0], 1);
  store_->tasks.complete_task(first[1], 1);
  EXPECT_TRUE(store_->tasks.claim_tasks(1000000, 10, 500).empty());  // done tasks never come back
}

TEST_P(StoreTest, RetriedTaskWaitsForItsTimeAndKeepsItsKeyBlocked) {
  store_->tasks.enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  store_->tasks.retry_task(a1[0], 1, 3000, "HTTP 502");
  // A1 is not due and A2 is behind it, though A2 is due and A1's lease is gone.
  EXPECT_TRUE(store_->tasks.claim_tasks(2000, 10, 500).empty());
  EXPECT_TRUE(store_->tasks.claim_tasks(2999, 10, 500).empty());
  auto again = store_->tasks.claim_tasks(3000, 10, 500);
  ASSERT_EQ(payloads(again), Strings{"A1"});
  EXPECT_EQ(again[0].id, a1[0].id);
  EXPECT_EQ(again[0].attempts, 1);
  EXPECT_EQ(again[0].last_error, "HTTP 502");
  EXPECT_EQ(again[0].next_attempt_ms, 3500);
  store_->tasks.complete_task(again[0], 2);
  auto a2 = store_->tasks.claim_tasks(3000, 10, 500);
  ASSERT_EQ(payloads(a2), Strings{"A2"});
  auto all = store_->tasks.tasks_of_kind("check_run");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, TaskStatus::kDone);
  EXPECT_EQ(all[0].attempts, 2);
  EXPECT_EQ(all[0].last_error, "");  // completion clears the retry's error
}

TEST_P(StoreTest, FailedTaskUnblocksItsKey) {
  store_->tasks.enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  store_->tasks.fail_task(a1[0], 5, "HTTP 422: gone");
  EXPECT_EQ(payloads(store_->tasks.claim_tasks(1000, 10, 500)), Strings{"A2"});
  auto all = store_->tasks.tasks_of_kind("check_run");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, TaskStatus::kFailed);
  EXPECT_EQ(all[0].attempts, 5);
  EXPECT_EQ(all[0].last_error, "HTTP 422: gone");
  // A failed task is never claimed again: long after, only A2 (its lease expired) comes back.
  EXPECT_EQ(payloads(store_->tasks.claim_tasks(1000000, 10, 500)), Strings{"A2"});
}

TEST_P(StoreTest, ExpiredTaskLeaseBringsTheTaskBack) {
  store_->tasks.enqueue_tasks({task("check_run", "A", "A1"), task("check_run", "A", "A2")});
  auto a1 = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(a1), Strings{"A1"});
  EXPECT_TRUE(store_->tasks.claim_tasks(1499, 10, 500).empty());
  auto back = store_->tasks.claim_tasks(1500, 10, 500);
  ASSERT_EQ(payloads(back), Strings{"A1"});  // A2 stays behind the crashed worker's A1
  EXPECT_EQ(back[0].id, a1[0].id);
  EXPECT_EQ(back[0].next_attempt_ms, 2000);
}

TEST_P(StoreTest, ClaimTasksHonoursLimitAndDueTime) {
  store_->tasks.enqueue_tasks(
      {task("k", "A", "A1", 5000), task("k", "B", "B1", 5000), task("k", "C", "C1", 5000)});
  EXPECT_TRUE(store_->tasks.claim_tasks(4999, 10, 100).empty());
  EXPECT_EQ(payloads(store_->tasks.claim_tasks(5000, 2, 100)), (Strings{"A1", "B1"}));
  EXPECT_EQ(payloads(store_->tasks.claim_tasks(5000, 2, 100)), Strings{"C1"});
}

TEST_P(StoreTest, JobTasksAreClaimable) {
  JobRecord j = job("k1", "s", JobStatus::kInProgress, 1);
  ASSERT_TRUE(store_->jobs.insert_job(j, {task("check_run", "k1", "create")}));
  j.status = JobStatus::kCompleted;
  ASSERT_TRUE(
      store_->jobs.update_job(j, JobStatus::kInProgress, {task("check_run", "k1", "complete")}));
  auto first = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(payloads(first), Strings{"create"});
  store_->tasks.complete_task(first[0], 1);
  EXPECT_EQ(payloads(store_->tasks.claim_tasks(1000, 10, 500)), Strings{"complete"});
}

TEST_P(StoreTest, TaskCountsAndTasksOfKind) {
  EXPECT_EQ(store_->tasks.task_counts().pending, 0);
  store_->tasks.enqueue_tasks({task("check_run", "A", R"({"n":1})"), task("check_run", "B", "2"),
                               task("hud", "C", "3"), task("check_run", "D", "4")});
  store_->tasks.enqueue_tasks({});
  auto claimed = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(claimed.size(), 4u);
  store_->tasks.complete_task(claimed[0], 1);
  store_->tasks.fail_task(claimed[1], 3, "boom");
  store_->tasks.retry_task(claimed[2], 2, 9000, "later");
  TaskCounts c = store_->tasks.task_counts();
  EXPECT_EQ(c.pending, 2);
  EXPECT_EQ(c.done, 1);
  EXPECT_EQ(c.failed, 1);

  auto cr = store_->tasks.tasks_of_kind("check_run");
  ASSERT_EQ(payloads(cr), (Strings{R"({"n":1})", "2", "4"}));
  EXPECT_LT(cr[0].id, cr[1].id);
  EXPECT_LT(cr[1].id, cr[2].id);
  EXPECT_EQ(cr[0].status, TaskStatus::kDone);
  EXPECT_EQ(cr[1].status, TaskStatus::kFailed);
  EXPECT_EQ(cr[1].last_error, "boom");
  EXPECT_EQ(cr[2].status, TaskStatus::kPending);
  EXPECT_EQ(cr[2].ordering_key, "D");
  auto hud = store_->tasks.tasks_of_kind("hud");
  ASSERT_EQ(hud.size(), 1u);
  EXPECT_EQ(hud[0].status, TaskStatus::kPending);
  EXPECT_EQ(hud[0].attempts, 2);
  EXPECT_EQ(hud[0].next_attempt_ms, 9000);
  EXPECT_EQ(hud[0].last_error, "later");
  EXPECT_TRUE(store_->tasks.tasks_of_kind("none").empty());
}

TEST_P(StoreTest, ConcurrentTaskClaimsNeverHandOutATaskTwice) {
  std::vector<TaskItem> tasks;
  for (int i = 0; i < 200; ++i)
    tasks.push_back(task("k", "key" + std::to_string(i), std::to_string(i)));
  store_->tasks.enqueue_tasks(tasks);
  std::multiset<int64_t> seen =
      claim_from_four_threads([&] { return store_->tasks.claim_tasks(1000, 7, 1000000); });
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
  store_->tasks.enqueue_tasks(pre);

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
        store_->tasks.enqueue_tasks(
            {task("k", "shared", "e" + std::to_string(e) + "-" + std::to_string(i))});
    });
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      while (done < kTotal && std::chrono::steady_clock::now() < deadline) {
        auto got = store_->tasks.claim_tasks(1000, 5, 1000000);
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
        for (const auto& t : got) store_->tasks.complete_task(t, 1);
        done += static_cast<int>(got.size());
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(done, kTotal);
  EXPECT_EQ(multi, 0);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(out_of_order, 0);
  TaskCounts c = store_->tasks.task_counts();
  EXPECT_EQ(c.done, kTotal);
  EXPECT_EQ(c.pending, 0);
}

TEST_P(StoreTest, MetaUpserts) {
  EXPECT_FALSE(store_->shared.get_meta("sweeper_heartbeat"));
  store_->shared.set_meta("sweeper_heartbeat", "1000");
  EXPECT_EQ(store_->shared.get_meta("sweeper_heartbeat"), "1000");
  store_->shared.set_meta("sweeper_heartbeat", "2000");
  EXPECT_EQ(store_->shared.get_meta("sweeper_heartbeat"), "2000");
  store_->shared.set_meta("other", "");
  EXPECT_EQ(store_->shared.get_meta("other"), "");
  EXPECT_EQ(store_->shared.get_meta("sweeper_heartbeat"), "2000");
  EXPECT_FALSE(store_->shared.get_meta("missing"));
}

// ---- HUD reads ----

constexpr int64_t kDay = 86400000;
constexpr int64_t kThreeHours = 3 * 3600 * 1000;

// A job for the HUD queries: completed with `conclusion`, or in_progress when it is "".
JobRecord hud_job(const std::string& key, const std::string& repo, const std::string& event,
                  int64_t pr, int64_t created_ms, const std::string& conclusion = "success",
                  int64_t queue_ms = -1, int64_t exec_ms = -1, const std::string& level = "L1") {
  JobRecord j;
  j.key = key;
  j.delivery_id = "d-" + key;
  j.repo = repo;
  j.job_name = key;
  j.workflow_name = "CI";
  j.event_type = event;
  j.head_sha = "sha-" + key;
  j.pr_number = pr;
  j.level = level;
  j.status = conclusion.empty() ? JobStatus::kInProgress : JobStatus::kCompleted;
  j.conclusion = JobConclusion::parse(conclusion);
  j.queue_time_ms = queue_ms;
  j.execution_time_ms = exec_ms;
  j.created_ms = created_ms;
  return j;
}

void insert_all(Store& store, const std::vector<JobRecord>& jobs) {
  for (const auto& j : jobs) ASSERT_TRUE(store.jobs.insert_job(j, {})) << j.key;
}

auto stats_fields(const RepoStats& r) {
  return std::tie(r.repo, r.level, r.jobs, r.success, r.failure, r.timed_out, r.cancelled,
                  r.in_progress, r.prs, r.queue_sum_ms, r.queue_n, r.exec_sum_ms, r.exec_n,
                  r.overruns, r.first_ms, r.last_ms);
}

RepoStats stats(const std::string& repo, const std::string& level) {
  RepoStats r;
  r.repo = repo;
  r.level = level;
  return r;
}

void expect_stats(const std::vector<RepoStats>& got, const std::vector<RepoStats>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const RepoStats &g = got[i], &w = want[i];
    EXPECT_EQ(g.repo, w.repo);
    EXPECT_EQ(g.level, w.level) << w.repo;
    EXPECT_EQ(g.jobs, w.jobs) << w.repo;
    EXPECT_EQ(g.success, w.success) << w.repo;
    EXPECT_EQ(g.failure, w.failure) << w.repo;
    EXPECT_EQ(g.timed_out, w.timed_out) << w.repo;
    EXPECT_EQ(g.cancelled, w.cancelled) << w.repo;
    EXPECT_EQ(g.in_progress, w.in_progress) << w.repo;
    EXPECT_EQ(g.prs, w.prs) << w.repo;
    EXPECT_EQ(g.queue_sum_ms, w.queue_sum_ms) << w.repo;
    EXPECT_EQ(g.queue_n, w.queue_n) << w.repo;
    EXPECT_EQ(g.exec_sum_ms, w.exec_sum_ms) << w.repo;
    EXPECT_EQ(g.exec_n, w.exec_n) << w.repo;
    EXPECT_EQ(g.overruns, w.overruns) << w.repo;
    EXPECT_EQ(g.first_ms, w.first_ms) << w.repo;
    EXPECT_EQ(g.last_ms, w.last_ms) << w.repo;
    EXPECT_TRUE(stats_fields(g) == stats_fields(w)) << w.repo;
  }
}

// A window starts at since_ms and reaches the present. Its whole hours come from the rollups, the
// part of an hour before them from the job rows: the jobs below fall on both sides.
TEST_P(StoreTest, RepoStatsAggregatesTheWindowPerRepoAndFilter) {
  // Big enough that a 32-bit sum would overflow.
  constexpr int64_t kLong = 5'000'000'000;
  constexpr int64_t H = 3'600'000;
  constexpr int64_t since = 10 * H + 1000;  // rows in [since, 11 h), rollups from 11 h
  insert_all(
      *store_,
      {
          // org/a, pull_request + push.
          hud_job("a1", "org/a", "pull_request", 1, since, "success", 10, 100, "L1"),
          hud_job("a2", "org/a", "push", 0, 11 * H + 5, "failure", -1, kThreeHours + 1, "L2"),
          hud_job("a3", "org/a", "pull_request", 1, 12 * H, "timed_out", 20, -1, "L1"),
          hud_job("a4", "org/a", "pull_request", 2, 13 * H + 7, "", 5, -1, "L3"),
          hud_job("a6", "org/a", "pull_request", 4, since - 1, "success", 1,
                  1),  // before
                       // org/a, nightly + periodic.
          hud_job("a7", "org/a", "nightly", 0, since + 200, "cancelled", 7, -1, "L4"),
          hud_job("a8", "org/a", "periodic", 0, 15 * H, "success", 0, kThreeHours, "L0"),
          // Other event types count in neither view.
          hud_job("a9", "org/a", "workflow_dispatch", 5, 11 * H, "failure", 1, 1, "L9"),
          // One PR on both sides of the first whole hour is one PR.
          hud_job("b1", "org/b", "pull_request", 7, since + 100, "cancelled", 1, 2, "L2"),
          hud_job("b2", "org/b", "pull_request", 7, 14 * H, "failure", kLong, kLong, "L2"),
          hud_job("c1", "org/c", "nightly", 0, 11 * H + 1, "failure", -1, -1, "L1"),
          // Byte order, as in SQLite: upper case sorts before lower case.
          hud_job("z1", "Zed/upper", "push", 0, 12 * H + 9, "neutral", -1, -1, "L1"),
      });

  RepoStats a = stats("org/a", "L3");
  a.jobs = 4, a.success = 1, a.failure = 1, a.timed_out = 1, a.in_progress = 1;
  a.prs = 2;  // PRs 1 and 2; the push's 0 is no PR
  a.queue_sum_ms = 35, a.queue_n = 3;
  a.exec_sum_ms = 100 + kThreeHours + 1, a.exec_n = 2, a.overruns = 1;
  a.first_ms = since, a.last_ms = 13 * H + 7;
  RepoStats b = stats("org/b", "L2");
  b.jobs = 2, b.failure = 1, b.cancelled = 1, b.prs = 1;
  b.queue_sum_ms = 1 + kLong, b.queue_n = 2, b.exec_sum_ms = 2 + kLong, b.exec_n = 2;
  b.overruns = 1;
  b.first_ms = since + 100, b.last_ms = 14 * H;
  RepoStats z = stats("Zed/upper", "L1");
  z.jobs = 1, z.first_ms = z.last_ms = 12 * H + 9;
  expect_stats(store_->jobs.repo_stats(since, JobFilter::kPullRequest), {z, a, b});
  expect_stats(store_->jobs.repo_stats(since, JobFilter::kPullRequest, "org/b"), {b});

  RepoStats an = stats("org/a", "L4");
  an.jobs = 2, an.success = 1, an.cancelled = 1;
  an.queue_sum_ms = 7, an.queue_n = 2;          // a queue of 0 counts
  an.exec_sum_ms = kThreeHours, an.exec_n = 1;  // exactly 3 h is no overrun
  an.first_ms = since + 200, an.last_ms = 15 * H;
  RepoStats cn = stats("org/c", "L1");
  cn.jobs = 1, cn.failure = 1, cn.first_ms = cn.last_ms = 11 * H + 1;
  expect_stats(store_->jobs.repo_stats(since, JobFilter::kNightly), {an, cn});

  // From a whole hour: rollups only.
  auto narrow = store_->jobs.repo_stats(11 * H, JobFilter::kPullRequest);
  ASSERT_EQ(narrow.size(), 3u);
  EXPECT_EQ(narrow[1].repo, "org/a");
  EXPECT_EQ(narrow[1].jobs, 3);  // a2, a3, a4
  EXPECT_EQ(narrow[1].level, "L3");
  EXPECT_EQ(narrow[1].prs, 2);
  EXPECT_EQ(narrow[1].in_progress, 1);
  EXPECT_EQ(narrow[1].first_ms, 11 * H + 5);
  EXPECT_EQ(narrow[1].last_ms, 13 * H + 7);
  EXPECT_EQ(narrow[2].prs, 1);  // PR 7's newest job is at 14 h
  // From within the first hour of all: rows only for the rest of that hour.
  auto wide = store_->jobs.repo_stats(1, JobFilter::kPullRequest);
  ASSERT_EQ(wide.size(), 3u);
  EXPECT_EQ(wide[1].jobs, 5);
  EXPECT_EQ(wide[1].prs, 3);
  EXPECT_EQ(wide[1].first_ms, since - 1);
  EXPECT_EQ(wide[1].last_ms, 13 * H + 7);
  EXPECT_TRUE(store_->jobs.repo_stats(16 * H, JobFilter::kPullRequest).empty());
  EXPECT_TRUE(store_->jobs.repo_stats(15 * H + 1, JobFilter::kNightly).empty());
}

TEST_P(StoreTest, UpdatesMoveTheRollupsWithTheJob) {
  constexpr int64_t H = 3'600'000;
  JobRecord j = hud_job("u1", "org/u", "pull_request", 3, 5 * H + 10, "", 60000, -1, "L2");
  ASSERT_TRUE(store_->jobs.insert_job(j, {}));
  auto s = store_->jobs.repo_stats(0, JobFilter::kPullRequest);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].in_progress, 1);
  EXPECT_EQ(s[0].exec_n, 0);
  EXPECT_TRUE(store_->jobs.e2e_histogram("org/u", 0).empty());

  // The callback completes it; a second one with a higher level only changes the level.
  j.status = JobStatus::kCompleted;
  j.conclusion = JobConclusion::kSuccess;
  j.execution_time_ms = 4 * H;
  ASSERT_TRUE(store_->jobs.update_job(j, JobStatus::kInProgress, {}));
  j.level = "L3";
  ASSERT_TRUE(store_->jobs.update_job(j, JobStatus::kCompleted, {}));
  // A refused update changes nothing.
  JobRecord refused = j;
  refused.conclusion = JobConclusion::kFailure;
  EXPECT_FALSE(store_->jobs.update_job(refused, JobStatus::kInProgress, {}));
  s = store_->jobs.repo_stats(0, JobFilter::kPullRequest);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].jobs, 1);
  EXPECT_EQ(s[0].in_progress, 0);
  EXPECT_EQ(s[0].success, 1);
  EXPECT_EQ(s[0].failure, 0);
  EXPECT_EQ(s[0].exec_sum_ms, 4 * H);
  EXPECT_EQ(s[0].overruns, 1);
  EXPECT_EQ(s[0].level, "L3");
  EXPECT_EQ(s[0].prs, 1);
  EXPECT_EQ(store_->jobs.e2e_histogram("org/u", 0),
            (std::vector<E2eBucket>{{2410, 1}}));  // 241 min
}

TEST_P(StoreTest, DailyStatsGroupsByUtcDay) {
  insert_all(*store_,
             {
                 hud_job("x1", "org/x", "pull_request", 1, 10 * kDay, "success"),
                 hud_job("x2", "org/x", "push", 0, 11 * kDay - 1, "failure"),  // still day 10
                 hud_job("x3", "org/x", "pull_request", 2, 10 * kDay + 5, ""),
                 hud_job("x4", "org/x", "pull_request", 2, 11 * kDay, "success"),
                 hud_job("x5", "org/x", "pull_request", 2, 11 * kDay + 7, "success"),
                 hud_job("x6", "org/x", "nightly", 0, 11 * kDay + 9, "failure"),
                 hud_job("x7", "org/x", "periodic", 0, 13 * kDay, "timed_out"),
                 hud_job("x8", "org/x", "pull_request", 3, 9 * kDay, "success"),  // before
                 hud_job("y1", "org/y", "pull_request", 4, 10 * kDay + 1, "failure"),
                 hud_job("A1", "Org/A", "push", 0, 12 * kDay, "cancelled"),
             });
  auto rows = [](const std::vector<DailyStats>& v) {
    std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> out;
    for (const auto& d : v) out.emplace_back(d.repo, d.day, d.jobs, d.success, d.failure);
    return out;
  };
  using Row = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;
  EXPECT_EQ(rows(store_->jobs.daily_stats(10 * kDay, JobFilter::kPullRequest)),
            (std::vector<Row>{{"Org/A", 12, 1, 0, 0},
                              {"org/x", 10, 3, 1, 1},
                              {"org/x", 11, 2, 2, 0},
                              {"org/y", 10, 1, 0, 1}}));
  EXPECT_EQ(rows(store_->jobs.daily_stats(10 * kDay, JobFilter::kNightly)),
            (std::vector<Row>{{"org/x", 11, 1, 0, 1}, {"org/x", 13, 1, 0, 0}}));
  // The window starts inside a day: only the part of the day in the window counts, from the job
  // rows up to the next whole hour (x3) and from the rollups after it (x2).
  EXPECT_EQ(
      rows(store_->jobs.daily_stats(10 * kDay + 2, JobFilter::kPullRequest)),
      (std::vector<Row>{{"Org/A", 12, 1, 0, 0}, {"org/x", 10, 2, 0, 1}, {"org/x", 11, 2, 2, 0}}));
  EXPECT_TRUE(store_->jobs.daily_stats(14 * kDay, JobFilter::kPullRequest).empty());
}

TEST_P(StoreTest, RepoPrsNewestFirstWithPagingAndTotal) {
  insert_all(*store_, {
                          hud_job("p5a", "org/r", "pull_request", 5, 100),
                          hud_job("p3", "org/r", "pull_request", 3, 300),
                          hud_job("p5b", "org/r", "pull_request", 5, 200),
                          hud_job("p9", "org/r", "pull_request", 9, 200),  // ties with 5: 9 first
                          hud_job("p7", "org/r", "pull_request", 7, 50),
                          hud_job("push", "org/r", "push", 0, 400),  // no PR
                          hud_job("p8", "org/r", "pull_request", 8, 1000),
                          hud_job("other", "org/s", "pull_request", 11, 500),
                      });
  int64_t total = -1;
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 0, 10, 0, &total),
            (std::vector<int64_t>{8, 3, 9, 5, 7}));
  EXPECT_EQ(total, 5);
  total = -1;
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 0, 2, 1, &total), (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(total, 5);  // the total ignores the page
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 0, 2, 3, &total), (std::vector<int64_t>{5, 7}));
  total = -1;
  EXPECT_TRUE(store_->jobs.repo_prs("org/r", 0, 10, 5, &total).empty());
  EXPECT_EQ(total, 5);
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 0, -1, 0, nullptr),
            (std::vector<int64_t>{8, 3, 9, 5, 7}));
  // A PR is in the window while its newest job is.
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 150, 10, 0, &total), (std::vector<int64_t>{8, 3, 9, 5}));
  EXPECT_EQ(total, 4);
  // A new job moves its PR forward; an older one does not move it back.
  insert_all(*store_, {hud_job("p7b", "org/r", "pull_request", 7, 250),
                       hud_job("p8old", "org/r", "pull_request", 8, 10)});
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 150, 10, 0, &total),
            (std::vector<int64_t>{8, 3, 7, 9, 5}));
  EXPECT_EQ(total, 5);
  EXPECT_TRUE(store_->jobs.repo_prs("org/none", 0, 10, 0, &total).empty());
  EXPECT_EQ(total, 0);
}

TEST_P(StoreTest, RepoJobsForPrsOrdersByPrThenWorkflowJobAttempt) {
  auto j = [](const std::string& key, const std::string& repo, int64_t pr, const std::string& wf,
              const std::string& name, int64_t attempt) {
    JobRecord r = hud_job(key, repo, "pull_request", pr, 100);
    r.workflow_name = wf;
    r.job_name = name;
    r.run_attempt = attempt;
    return r;
  };
  JobRecord full = full_job();
  full.repo = "org/r";
  full.pr_number = 3;
  insert_all(*store_, {
                          j("k1", "org/r", 5, "B", "x", 1),
                          j("k2", "org/r", 5, "A", "y", 2),
                          j("k3", "org/r", 5, "A", "y", 1),
                          j("k4", "org/r", 5, "A", "Z", 1),  // byte order: Z before y
                          full,
                          j("k6", "org/r", 9, "A", "a", 1),
                          j("k7", "org/s", 5, "A", "a", 1),
                      });
  auto got = store_->jobs.repo_jobs_for_prs("org/r", {3, 5}, 0);
  EXPECT_EQ(keys(got), (Strings{"k4", "k3", "k2", "k1", full.key}));
  ASSERT_EQ(got.size(), 5u);
  expect_same_job(got[4], full);
  EXPECT_EQ(keys(store_->jobs.repo_jobs_for_prs("org/r", {9}, 0)), Strings{"k6"});
  EXPECT_EQ(keys(store_->jobs.repo_jobs_for_prs("org/s", {5, 9, 3}, 0)), Strings{"k7"});
  EXPECT_TRUE(store_->jobs.repo_jobs_for_prs("org/r", {}, 0).empty());
  EXPECT_TRUE(store_->jobs.repo_jobs_for_prs("org/r", {4}, 0).empty());
  // Only the window's jobs: k8 is older.
  JobRecord old = j("k8", "org/r", 9, "A", "b", 1);
  old.created_ms = 40;
  insert_all(*store_, {old});
  EXPECT_EQ(keys(store_->jobs.repo_jobs_for_prs("org/r", {9}, 0)), (Strings{"k6", "k8"}));
  EXPECT_EQ(keys(store_->jobs.repo_jobs_for_prs("org/r", {9}, 50)), Strings{"k6"});
}

TEST_P(StoreTest, RecentJobsNewestFirstWithFilterPagingAndTotal) {
  insert_all(*store_, {
                          hud_job("n1", "org/r", "nightly", 0, 100),  // before the window
                          hud_job("n-b", "org/r", "nightly", 0, 300),
                          hud_job("n3", "org/r", "nightly", 0, 200),
                          hud_job("n-a", "org/r", "nightly", 0, 300),  // ties: key order
                          hud_job("p1", "org/r", "periodic", 0, 400),
                          hud_job("n5", "org/r", "nightly", 0, 1000),
                          hud_job("pr", "org/r", "pull_request", 1, 250),
                          hud_job("other", "org/s", "nightly", 0, 250),
                      });
  int64_t total = -1;
  EXPECT_EQ(keys(store_->jobs.recent_jobs("org/r", 150, JobFilter::kNightly, 10, 0, &total)),
            (Strings{"n5", "p1", "n-a", "n-b", "n3"}));
  EXPECT_EQ(total, 5);
  total = -1;
  EXPECT_EQ(keys(store_->jobs.recent_jobs("org/r", 150, JobFilter::kNightly, 2, 1, &total)),
            (Strings{"p1", "n-a"}));
  EXPECT_EQ(total, 5);
  EXPECT_EQ(keys(store_->jobs.recent_jobs("org/r", 150, JobFilter::kNightly, 2, 4, &total)),
            Strings{"n3"});
  EXPECT_TRUE(store_->jobs.recent_jobs("org/r", 150, JobFilter::kNightly, 2, 5, &total).empty());
  EXPECT_EQ(total, 5);
  EXPECT_EQ(keys(store_->jobs.recent_jobs("org/r", 0, JobFilter::kNightly, -1, 0, nullptr)),
            (Strings{"n5", "p1", "n-a", "n-b", "n3", "n1"}));
  EXPECT_EQ(keys(store_->jobs.recent_jobs("org/r", 150, JobFilter::kPullRequest, 10, 0, &total)),
            Strings{"pr"});
  EXPECT_EQ(total, 1);
  auto one = store_->jobs.recent_jobs("org/s", 0, JobFilter::kNightly, 10, 0, &total);
  ASSERT_EQ(one.size(), 1u);
  expect_same_job(one[0], hud_job("other", "org/s", "nightly", 0, 250));
  EXPECT_TRUE(store_->jobs.recent_jobs("org/t", 0, JobFilter::kNightly, 10, 0, &total).empty());
  EXPECT_EQ(total, 0);
}

TEST_P(StoreTest, E2eHistogramOnlyForJobsWithBothTimesToTheTenthOfAMinute) {
  insert_all(
      *store_,
      {
          // 20.0 min; and on a later day, from the daily rollups.
          hud_job("both", "org/r", "pull_request", 1, 100, "success", 60000, 1140000),
          hud_job("later", "org/r", "pull_request", 1, 3 * kDay + 5, "success", 60000, 1140000),
          hud_job("noq", "org/r", "pull_request", 1, 100, "success", -1, 50),
          hud_job("noe", "org/r", "pull_request", 1, 100, "", 5, -1),
          hud_job("zero", "org/r", "push", 0, 100, "failure", 0, 0),
          hud_job("night", "org/r", "nightly", 0, 199, "success", 1, 2),
          // 2,999 ms is 0.0 min; 3,000 ms rounds up to 0.1 min.
          hud_job("below", "org/r", "pull_request", 1, 200, "success", 1000, 1999),
          hud_job("half", "org/r", "pull_request", 1, 200, "success", 1000, 2000),
          hud_job("early", "org/r", "pull_request", 1, 99, "success", 1, 1),
          hud_job("other", "org/s", "pull_request", 1, 100, "success", 1, 1),
      });
  EXPECT_EQ(store_->jobs.e2e_histogram("org/r", 100),
            (std::vector<E2eBucket>{{0, 3}, {1, 1}, {200, 2}}));
  EXPECT_EQ(store_->jobs.e2e_histogram("org/r", kDay), (std::vector<E2eBucket>{{200, 1}}));
  EXPECT_TRUE(store_->jobs.e2e_histogram("org/t", 0).empty());
  EXPECT_EQ(e2e_bucket(2999), 0);
  EXPECT_EQ(e2e_bucket(3000), 1);
  EXPECT_EQ(e2e_bucket(1'200'000), 200);
}

TEST_P(StoreTest, PruningKeepsTheRollupsAndSaysWhereDetailBegins) {
  constexpr int64_t H = 3'600'000;
  insert_all(*store_, {
                          hud_job("old1", "org/r", "pull_request", 1, 2 * H, "success", 10, 20),
                          hud_job("old2", "org/r", "pull_request", 2, 2 * H + 5, "failure", 1, 2),
                          hud_job("running", "org/r", "pull_request", 3, 2 * H + 9, ""),
                          hud_job("new", "org/r", "pull_request", 1, 5 * H, "success", 1, 1),
                      });
  EXPECT_EQ(store_->jobs.detail_since(), 0);
  auto before = store_->jobs.repo_stats(0, JobFilter::kPullRequest);
  auto e2e_before = store_->jobs.e2e_histogram("org/r", 0);
  EXPECT_EQ(store_->jobs.prune_jobs(4 * H, 1), 1);  // one per call
  EXPECT_EQ(store_->jobs.prune_jobs(4 * H, 10), 1);
  EXPECT_EQ(store_->jobs.prune_jobs(4 * H, 10), 0);  // an in-progress job stays
  EXPECT_FALSE(store_->jobs.get_job("old1"));
  EXPECT_FALSE(store_->jobs.get_job("old2"));
  EXPECT_TRUE(store_->jobs.get_job("running"));
  EXPECT_EQ(store_->jobs.detail_since(), 4 * H);
  expect_stats(store_->jobs.repo_stats(0, JobFilter::kPullRequest), before);
  EXPECT_EQ(store_->jobs.e2e_histogram("org/r", 0), e2e_before);
  // PR 2 had no job after the cut: gone from the PR list, still counted in the rollups.
  EXPECT_EQ(store_->jobs.repo_prs("org/r", 4 * H, 10, 0, nullptr), (std::vector<int64_t>{1}));
  // An earlier cut does not move detail back.
  store_->jobs.prune_jobs(3 * H, 10);
  EXPECT_EQ(store_->jobs.detail_since(), 4 * H);
}

TEST_P(StoreTest, JobsForPrAcrossReposInOrder) {
  auto j = [](const std::string& key, const std::string& repo, int64_t pr, const std::string& wf,
              const std::string& name, int64_t attempt) {
    JobRecord r = hud_job(key, repo, "pull_request", pr, 100);
    r.workflow_name = wf;
    r.job_name = name;
    r.run_attempt = attempt;
    return r;
  };
  insert_all(*store_, {
                          j("k1", "org/b", 42, "CI", "a", 1),
                          j("k2", "org/a", 42, "CI", "b", 2),
                          j("k3", "org/a", 42, "CI", "b", 1),
                          j("k4", "org/a", 42, "Build", "z", 1),
                          j("k5", "Org/z", 42, "CI", "a", 1),
                          j("k6", "org/a", 43, "CI", "a", 1),
                      });
  EXPECT_EQ(keys(store_->jobs.jobs_for_pr(42)), (Strings{"k5", "k4", "k3", "k2", "k1"}));
  EXPECT_EQ(keys(store_->jobs.jobs_for_pr(43)), Strings{"k6"});
  EXPECT_TRUE(store_->jobs.jobs_for_pr(44).empty());
}

TEST_P(StoreTest, InsertJobsBulkIgnoresExistingKeysAndRoundTrips) {
  JobRecord existing = hud_job("k0", "org/r", "pull_request", 1, 100, "");
  ASSERT_TRUE(store_->jobs.insert_job(existing, {}));

  // Text that a COPY or a multi-row INSERT must escape.
  JobRecord tricky = full_job();
  tricky.key = "k1";
  tricky.repo = "org/r";
  tricky.job_name = "tab\there, newline\nthere, backslash \\ and \\N, quote ' \" , caf\xc3\xa9";
  tricky.last_body = "\\.\n\r\n\\\\N\t";
  tricky.workflow_url = "";
  tricky.check_run_created = false;
  tricky.run_id = "-7";
  tricky.created_ms = 123;

  JobRecord overwrite = existing;
  overwrite.status = JobStatus::kCompleted;
  overwrite.conclusion = JobConclusion::kFailure;
  JobRecord dup = tricky;
  dup.job_name = "second";
  dup.created_ms = 456;

  std::vector<JobRecord> bulk = {overwrite, tricky};
  for (int i = 2; i < 2002; ++i) {
    JobRecord j = hud_job("k" + std::to_string(i), "org/r", i % 2 ? "push" : "pull_request", i / 10,
                          1000 + i, i % 3 ? "success" : "failure", i, 2 * i);
    j.check_run_created = i % 5 == 0;
    bulk.push_back(j);
  }
  bulk.push_back(dup);  // a repeated key in the batch: the first one wins
  store_->jobs.insert_jobs_bulk(bulk);
  store_->jobs.insert_jobs_bulk({});

  expect_same_job(store_->jobs.get_job("k0"), existing);
  expect_same_job(store_->jobs.get_job("k1"), tricky);
  for (size_t i = 2; i < 2002; i += 333)
    expect_same_job(store_->jobs.get_job(bulk[i].key), bulk[i]);
  int64_t total = 0;
  store_->jobs.recent_jobs("org/r", 0, JobFilter::kPullRequest, 1, 0, &total);
  EXPECT_EQ(total, 2002);
  auto s = store_->jobs.repo_stats(0, JobFilter::kPullRequest);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].jobs, 2002);
  EXPECT_EQ(s[0].in_progress, 2);  // k0 and k1, neither overwritten
  EXPECT_EQ(s[0].last_ms, 1000 + 2001);

  // Bulk inserting again adds nothing and changes nothing.
  bulk[5].conclusion = JobConclusion::kCancelled;
  store_->jobs.insert_jobs_bulk(bulk);
  EXPECT_EQ(store_->jobs.repo_stats(0, JobFilter::kPullRequest)[0].jobs, 2002);
  EXPECT_EQ(store_->jobs.get_job(bulk[5].key)->conclusion.text(), "success");
}

TEST_P(StoreTest, RecordLevelAppendsOnlyOnChange) {
  EXPECT_FALSE(store_->levels.level_since("org/r", "L1"));
  store_->levels.record_level("org/r", "L1", 100);
  EXPECT_EQ(store_->levels.level_since("org/r", "L1"), 100);
  store_->levels.record_level("org/r", "L1", 200);  // same level: the run still began at 100
  EXPECT_EQ(store_->levels.level_since("org/r", "L1"), 100);
  EXPECT_FALSE(store_->levels.level_since("org/r", "L2"));

  store_->levels.record_level("org/r", "L2", 300);
  store_->levels.record_level("org/r", "L2", 400);
  EXPECT_EQ(store_->levels.level_since("org/r", "L2"), 300);
  EXPECT_FALSE(store_->levels.level_since("org/r", "L1"));  // no longer the current level

  // Back to L1: a new run, not the old one.
  store_->levels.record_level("org/r", "L1", 500);
  EXPECT_EQ(store_->levels.level_since("org/r", "L1"), 500);
  EXPECT_FALSE(store_->levels.level_since("org/r", "L2"));
  store_->levels.record_level("org/r", "L1", 600);
  EXPECT_EQ(store_->levels.level_since("org/r", "L1"), 500);

  // Repos are independent.
  EXPECT_FALSE(store_->levels.level_since("org/s", "L1"));
  store_->levels.record_level("org/s", "L2", 700);
  EXPECT_EQ(store_->levels.level_since("org/s", "L2"), 700);
  EXPECT_EQ(store_->levels.level_since("org/r", "L1"), 500);

  // The history holds the changes and nothing else.
  EXPECT_EQ(raw_sql(uri_, "SELECT repo, level, since_ms FROM level_history ORDER BY since_ms"),
            (SqlRows{{"org/r", "L1", "100"},
                     {"org/r", "L2", "300"},
                     {"org/r", "L1", "500"},
                     {"org/s", "L2", "700"}}));
}

TEST_P(StoreTest, FirstAtLevelIsWhenTheRepoFirstReachedIt) {
  EXPECT_FALSE(store_->levels.first_at_level("org/r", "L2"));
  store_->levels.record_level("org/r", "L2", 100);
  store_->levels.record_level("org/r", "L3", 300);
  store_->levels.record_level("org/r", "L2", 500);  // demoted: tenure still counts from 100
  EXPECT_EQ(store_->levels.first_at_level("org/r", "L2"), 100);
  EXPECT_EQ(store_->levels.level_since("org/r", "L2"), 500);
  EXPECT_EQ(store_->levels.first_at_level("org/r", "L3"), 300);
  EXPECT_FALSE(store_->levels.first_at_level("org/r", "L4"));
}

TEST_P(StoreTest, DemotionsKeepTheirFirstSinceUntilCleared) {
  EXPECT_TRUE(store_->levels.demotions().empty());
  store_->levels.set_demotion({"org/b", 1000, 12, "https://github.com/u/p/pull/12"});
  store_->levels.set_demotion({"org/a", 1500, 13, "u13"});
  store_->levels.set_demotion(
      {"org/b", 9000, 14, "u14"});  // seen again: since stays, the PR moves on
  auto b = store_->levels.demotion("org/b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->since_ms, 1000);
  EXPECT_EQ(b->pr_number, 14);
  EXPECT_EQ(b->pr_url, "u14");
  auto all = store_->levels.demotions();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].repo, "org/a");
  store_->levels.clear_demotion("org/b");
  EXPECT_FALSE(store_->levels.demotion("org/b"));
  store_->levels.set_demotion({"org/b", 20000, 15, "u15"});  // a new demotion begins anew
  EXPECT_EQ(store_->levels.demotion("org/b")->since_ms, 20000);
}

TEST_P(StoreTest, RunDueLetsOneCallerRunPerInterval) {
  EXPECT_TRUE(store_->shared.run_due("sync", 1000, 500));
  EXPECT_FALSE(store_->shared.run_due("sync", 1200, 500));
  EXPECT_TRUE(store_->shared.run_due("other", 1200, 500));
  EXPECT_TRUE(store_->shared.run_due("sync", 1500, 500));
  // Replicas racing for one pass: exactly one wins.
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] { won += store_->shared.run_due("sync", 5000, 500); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(won, 1);
}

TEST_P(StoreTest, ClaimRedeliveryIsBoundedByGapAndAttempts) {
  EXPECT_TRUE(store_->shared.claim_redelivery("g1", 1000, 100, 2));
  EXPECT_FALSE(store_->shared.claim_redelivery("g1", 1050, 100, 2));  // asked for a moment ago
  EXPECT_TRUE(store_->shared.claim_redelivery("g2", 1050, 100, 2));
  EXPECT_TRUE(store_->shared.claim_redelivery("g1", 1100, 100, 2));
  EXPECT_FALSE(store_->shared.claim_redelivery("g1", 5000, 100, 2));  // max attempts reached
}

TEST_P(StoreTest, CountOverdueJobsAndTheNewestJobPerRepo) {
  insert_all(*store_,
             {hud_job("a", "org/a", "nightly", 0, 5000), hud_job("b", "org/a", "nightly", 0, 9000),
              hud_job("c", "org/b", "periodic", 0, 7000),
              hud_job("d", "org/c", "pull_request", 1, 8000, "")});
  JobRecord running = hud_job("e", "org/c", "pull_request", 1, 100, "");
  running.in_progress_ms = 100;
  JobRecord later = hud_job("f", "org/c", "pull_request", 1, 400, "");
  later.in_progress_ms = 400;
  insert_all(*store_, {running, later});
  EXPECT_EQ(store_->jobs.count_overdue_jobs(300), 2);  // d (never started: -1), e
  EXPECT_EQ(store_->jobs.count_overdue_jobs(500), 3);
  EXPECT_EQ(store_->jobs.last_job_ms(JobFilter::kNightly),
            (std::map<std::string, int64_t>{{"org/a", 9000}, {"org/b", 7000}}));
  EXPECT_EQ(store_->jobs.last_job_ms(JobFilter::kPullRequest),
            (std::map<std::string, int64_t>{{"org/c", 8000}}));
}

// The nightly summary counts the latest attempt of a run's job (test-infra#8832): a re-run
// supersedes the earlier attempt, whichever is written first, and only that attempt leaves the
// counts, the run list and the daily figures.
TEST_P(StoreTest, ALaterNightlyAttemptSupersedesTheEarlierOne) {
  constexpr int64_t H = 3'600'000;
  auto attempt = [&](const std::string& key, const std::string& job, int64_t run_attempt,
                     int64_t at, const std::string& conclusion) {
    JobRecord j = hud_job(key, "org/n", "nightly", 0, at, conclusion, -1, 1000 * run_attempt);
    j.job_name = job;
    j.run_id = "77";
    j.run_attempt = run_attempt;
    return j;
  };
  insert_all(*store_, {attempt("s:1", "suite", 1, 10 * H, "failure")});
  auto nightly = [&] { return store_->jobs.repo_stats(0, JobFilter::kNightly, "org/n").at(0); };
  EXPECT_EQ(nightly().failure, 1);
  insert_all(*store_, {attempt("s:2", "suite", 2, 13 * H, "success")});
  EXPECT_EQ(nightly().jobs, 1);
  EXPECT_EQ(nightly().success, 1);
  EXPECT_EQ(nightly().failure, 0);
  EXPECT_EQ(nightly().first_ms, 13 * H);
  EXPECT_EQ(nightly().exec_max_ms, 2000);
  EXPECT_TRUE(store_->jobs.get_job("s:1")->superseded);
  EXPECT_FALSE(store_->jobs.get_job("s:2")->superseded);
  // An earlier attempt stored late is superseded at once; another job of the run is not.
  insert_all(*store_, {attempt("s:0", "suite", 1, 9 * H, "cancelled"),
                       attempt("o:1", "other", 1, 10 * H, "failure")});
  EXPECT_TRUE(store_->jobs.get_job("s:0")->superseded);
  EXPECT_EQ(nightly().jobs, 2);
  EXPECT_EQ(nightly().cancelled, 0);
  int64_t total = 0;
  auto runs = store_->jobs.recent_jobs("org/n", 0, JobFilter::kNightly, 10, 0, &total);
  EXPECT_EQ(total, 2);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].key, "s:2");
  EXPECT_EQ(runs[1].key, "o:1");
  auto days = store_->jobs.daily_stats(0, JobFilter::kNightly);
  ASSERT_EQ(days.size(), 1u);
  EXPECT_EQ(days[0].jobs, 2);
  // The same through the bulk path, in one transaction.
  store_->jobs.insert_jobs_bulk(
      {attempt("b:1", "bulk", 1, 20 * H, "failure"), attempt("b:2", "bulk", 2, 21 * H, "success")});
  EXPECT_TRUE(store_->jobs.get_job("b:1")->superseded);
  EXPECT_EQ(nightly().jobs, 3);
  // Pull-request re-runs are not superseded: each attempt counts, as upstream's PR summary does.
  JobRecord pr1 = attempt("p:1", "pr", 1, 10 * H, "failure"),
            pr2 = attempt("p:2", "pr", 2, 11 * H, "success");
  pr1.event_type = pr2.event_type = "pull_request";
  insert_all(*store_, {pr1, pr2});
  EXPECT_FALSE(store_->jobs.get_job("p:1")->superseded);
  EXPECT_EQ(store_->jobs.repo_stats(0, JobFilter::kPullRequest, "org/n").at(0).jobs, 2);
}

// Four writers recording the same change at once append it once: each must see the others'
// append before deciding (PostgreSQL replicas share no mutex).
TEST_P(StoreTest, ConcurrentRecordLevelAppendsAChangeOnce) {
  for (int round = 0; round < 10; ++round) {
    std::string level = round % 2 ? "L1" : "L2";
    std::atomic<int64_t> now{1000 * (round + 1)};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 5; ++i) store_->levels.record_level("org/r", level, now++);
      });
    for (auto& t : threads) t.join();
    // Which writer got there first is up to the scheduler.
    auto since = store_->levels.level_since("org/r", level);
    ASSERT_TRUE(since) << round;
    EXPECT_GE(*since, 1000 * (round + 1)) << round;
    EXPECT_LT(*since, now.load()) << round;
  }
  auto rows = raw_sql(uri_, "SELECT level FROM level_history WHERE repo = 'org/r'");
  EXPECT_EQ(rows.size(), 10u);
}

TEST_P(StoreTest, MigrationV3BackfillsCreatedMs) {
  // A version-2 database with two jobs, one never in progress.
  std::string uri = fresh_store_uri(GetParam());
  bool pg = GetParam() == "postgres";
  const auto& steps = relay_schema(pg ? SqlDialect::kPostgres : SqlDialect::kSqlite).steps;
  ASSERT_GE(steps.size(), 3u);
  std::string values =
      "'{}','d','org/r',1,1,'j','wf','pull_request','sha',4,'L1','{}','',-1,{},{},"
      "-1,-1,'','',0,0,0,0,'','','',0,'','',''";
  raw_sql(uri, steps[0] + steps[1] +
                   (pg ? "CREATE TABLE schema_version (version INT NOT NULL); "
                         "INSERT INTO schema_version VALUES (2);"
                       : "PRAGMA user_version = 2;") +
                   "INSERT INTO jobs VALUES (" +
                   fmt::format(fmt::runtime(values), "started", "in_progress", 500, -1) +
                   "); INSERT INTO jobs VALUES (" +
                   fmt::format(fmt::runtime(values), "cancelled", "completed", -1, 700) + ");");

  auto store = open_store(uri);
  EXPECT_EQ(store->schema_version(), static_cast<int>(steps.size()));
  auto started = store->jobs.get_job("started");
  ASSERT_TRUE(started);
  EXPECT_EQ(started->created_ms, 500);
  EXPECT_EQ(started->in_progress_ms, 500);
  EXPECT_EQ(started->triage_json, "");
  auto cancelled = store->jobs.get_job("cancelled");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->created_ms, 700);
  EXPECT_EQ(cancelled->status, JobStatus::kCompleted);
  EXPECT_EQ(store->jobs.jobs_for_pr(4).size(), 2u);
  // The new table works on the upgraded schema too.
  store->levels.record_level("org/r", "L1", 5);
  EXPECT_EQ(store->levels.level_since("org/r", "L1"), 5);
  // Migration 5: integer run ids read back as they were, and a Buildkite build UUID fits.
  EXPECT_EQ(started->run_id, "1");
  JobRecord bk = *started;
  bk.key = "bk";
  bk.run_id = "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11";
  ASSERT_TRUE(store->jobs.insert_job(bk, {}));
  EXPECT_EQ(store->jobs.get_job("bk")->run_id, "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11");
}

constexpr const char* kUndoV8 =
    "DROP INDEX jobs_run; ALTER TABLE jobs DROP COLUMN verdict_category; "
    "ALTER TABLE jobs DROP COLUMN verdict_confidence; ALTER TABLE jobs DROP COLUMN superseded; "
    "DROP TABLE demotions; DROP TABLE redeliveries; ";
constexpr const char* kUndoV8Rollups =
    "ALTER TABLE hud_hourly DROP COLUMN exec_max_ms; "
    "ALTER TABLE hud_hourly DROP COLUMN failure_upstream; DROP INDEX hud_e2e_daily_jobs; ";
constexpr const char* kUndoV7 =
    "ALTER TABLE outbox DROP COLUMN lease; ALTER TABLE tasks DROP COLUMN lease; "
    "DROP TABLE rate_hits; ";

// Rows a v6 relay left leased or pending go on under v7: their leases run out as before, and
// the next claim holds them.
TEST_P(StoreTest, MigrationV7KeepsTheRowsInFlight) {
  store_->outbox.accept_delivery(delivery("d1"), rows({"a/x", "b/y"}));
  store_->tasks.enqueue_tasks({task("check_run", "A", "A1")});
  ASSERT_EQ(store_->outbox.claim_due(1000, 1, 500).size(), 1u);  // leased by a v6 worker
  store_.reset();
  raw_sql(uri_, std::string(kUndoV8) + kUndoV8Rollups + kUndoV7 +
                    "UPDATE schema_version SET version = 6;");
  store_ = open_store(uri_);
  EXPECT_EQ(store_->schema_version(), 8);
  auto pending = store_->outbox.claim_due(1000, 10, 500);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_TRUE(mark_delivered(*store_, pending[0], 1, 1001));
  auto expired = store_->outbox.claim_due(1500, 10, 500);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_TRUE(mark_failed(*store_, expired[0], 2, "gone"));
  auto t = store_->tasks.claim_tasks(1000, 10, 500);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(store_->tasks.complete_task(t[0], 1));
  EXPECT_EQ(store_->shared.rate_limit("org/a", 1000, 1, 60), 0);
  EXPECT_EQ(store_->shared.rate_limit("org/a", 1000, 1, 60), 60);
}

// Migrations 6 and 8 together: the rollups a store back-fills equal those its writes keep,
// nightly attempts a re-run superseded and failures a verdict blames on upstream included.
TEST_P(StoreTest, MigrationV6BackfillsTheRollupsTheWritesKeep) {
  constexpr int64_t H = 3'600'000;
  std::vector<JobRecord> jobs;
  for (int i = 0; i < 300; ++i) {
    const char* events[] = {"pull_request", "push", "nightly", "periodic", "workflow_dispatch"};
    const char* outcomes[] = {"success", "failure", "timed_out", "cancelled", "neutral", ""};
    jobs.push_back(hud_job("m" + std::to_string(i), i % 3 ? "org/a" : "Org/b", events[i % 5],
                           i % 5 == 0 ? 1 + i % 17 : 0, (int64_t{i} * 7'919'000) % (50 * H),
                           outcomes[i % 6], i % 4 ? 1000 * i : -1, i % 7 ? 997 * i : -1,
                           i % 2 ? "L2" : "L3"));
    JobRecord& j = jobs.back();
    j.run_id = std::to_string(i);
    if (j.conclusion == JobConclusion::kFailure && i % 4 != 3) {
      const char* categories[] = {"upstream", "upstream", "backend"};
      j.verdict_category = categories[i % 3];
      j.verdict_confidence = i % 5 ? "high" : "medium";
      j.triage_json = nlohmann::json{{"schema_version", 1},
                                     {"category", j.verdict_category},
                                     {"confidence", j.verdict_confidence}}
                          .dump();
    }
  }
  // Nightly re-runs: a later attempt of the same run and job, sometimes in the same hour.
  for (int i = 2; i < 300; i += 25) {
    JobRecord again = jobs[i];
    again.key += "-2";
    again.run_attempt = 2;
    again.created_ms += i % 2 ? 60'000 : 5 * H;
    again.level = "L4";
    jobs.push_back(again);
  }
  insert_all(*store_, jobs);
  for (int i = 5; i < 300; i += 6) {  // in progress, then completed by a callback
    JobRecord j = jobs[i];
    j.status = JobStatus::kCompleted;
    j.conclusion = JobConclusion::kSuccess;
    j.execution_time_ms = 4 * H;
    ASSERT_TRUE(store_->jobs.update_job(j, JobStatus::kInProgress, {}));
  }
  std::string tables[] = {"SELECT * FROM hud_hourly ORDER BY job_class, hour, repo",
                          "SELECT * FROM hud_e2e_daily ORDER BY repo, day, tenth_min",
                          "SELECT * FROM hud_pr_latest ORDER BY repo, job_class, pr_number",
                          "SELECT key, superseded, verdict_category, verdict_confidence FROM jobs "
                          "ORDER BY key"};
  std::vector<SqlRows> written;
  for (const auto& sql : tables) written.push_back(raw_sql(uri_, sql));
  ASSERT_GT(written[0].size(), 100u);
  store_.reset();
  raw_sql(uri_,
          "DROP TABLE hud_hourly; DROP TABLE hud_e2e_daily; DROP TABLE hud_pr_latest; "
          "DROP INDEX jobs_repo_event; DROP INDEX jobs_repo_pr; " +
              std::string(kUndoV8) + kUndoV7 + "UPDATE schema_version SET version = 5;");
  store_ = open_store(uri_);
  for (size_t t = 0; t < 4; ++t) {
    SqlRows now = raw_sql(uri_, tables[t]);
    EXPECT_EQ(now.size(), written[t].size()) << tables[t];
    for (size_t i = 0; i < std::min(now.size(), written[t].size()); ++i)
      EXPECT_EQ(now[i], written[t][i]) << tables[t] << " row " << i;
  }
  EXPECT_GT(
      std::count(written[3].begin(), written[3].end(), std::vector<std::string>{"m2", "1", "", ""}),
      0);
}

TEST(StoreOpen, RejectsUnknownUri) {
  EXPECT_THROW(open_store("mysql://x"), Error);
}

TEST(StoreOpen, SqliteReopenKeepsData) {
  std::string path = make_temp_dir() + "/reopen.db";
  open_store("sqlite:" + path)->outbox.accept_delivery(delivery("d1"), rows({"a/x"}));
  auto again = open_store("sqlite:" + path);
  EXPECT_EQ(again->outbox.outbox_for("d1").size(), 1u);
  EXPECT_EQ(again->schema_version(),
            static_cast<int>(relay_schema(SqlDialect::kSqlite).steps.size()));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci

namespace ootci {
namespace {

class StoreDeliveryTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreDeliveryTest, GetDeliveryCanSkipTheBody) {
  auto store = open_test_store(GetParam());
  ASSERT_TRUE(store->outbox.accept_delivery(
      {"d1", "pull_request", "opened", "abc", 7, 1000, R"({"big":1})", {}}, {}));
  auto lean = store->outbox.get_delivery("d1", false);
  ASSERT_TRUE(lean);
  EXPECT_EQ(lean->head_sha, "abc");
  EXPECT_EQ(lean->pr_number, 7);
  EXPECT_EQ(lean->body, "");
  EXPECT_EQ(store->outbox.get_delivery("d1")->body, R"({"big":1})");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreDeliveryTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci

namespace ootci {
namespace {

class StoreLateWriterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreLateWriterTest, AWorkerWhoseRowWasTakenOverChangesNothing) {
  std::string uri = fresh_store_uri(GetParam());
  auto store = open_store(uri);
  OutboxItem o;
  o.repo = "a/x";
  o.event_type = "push";
  o.callback_token = "t";
  o.created_ms = o.next_attempt_ms = 1000;
  o.deadline_ms = 100000;
  ASSERT_TRUE(store->outbox.accept_delivery({"d1", "push", "", "abc", 0, 1000, "{}", {}}, {o}));
  auto first = store->outbox.claim_due(1000, 1, 10);      // a worker whose lease will run out
  auto second = store->outbox.claim_due(1020, 1, 10000);  // the worker that takes over
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0].lease, second[0].lease);
  // Before the new holder records anything, the old one can neither finish nor reschedule it.
  EXPECT_FALSE(mark_delivered(*store, first[0], 1, 1025));
  EXPECT_FALSE(mark_retry(*store, first[0], 1, 5000, "late timeout"));
  EXPECT_EQ(store->outbox.outbox_for("d1")[0].status, OutboxStatus::kPending);
  EXPECT_TRUE(mark_delivered(*store, second[0], 2, 1030));
  EXPECT_FALSE(mark_failed(*store, first[0], 1, "late timeout"));
  auto row = store->outbox.outbox_for("d1")[0];
  EXPECT_EQ(row.status, OutboxStatus::kDelivered);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.delivered_ms, 1030);
  EXPECT_EQ(row.last_error, "");
  TaskItem t;
  t.kind = "check_run";
  t.ordering_key = "k";
  t.payload = "{}";
  store->tasks.enqueue_tasks({t});
  auto stale = store->tasks.claim_tasks(0, 1, 10);
  auto task = store->tasks.claim_tasks(20, 1, 10000);
  ASSERT_EQ(stale.size(), 1u);
  ASSERT_EQ(task.size(), 1u);
  EXPECT_FALSE(store->tasks.complete_task(stale[0], 1));
  EXPECT_TRUE(store->tasks.complete_task(task[0], 2));
  EXPECT_FALSE(store->tasks.fail_task(stale[0], 1, "late"));
  EXPECT_FALSE(store->tasks.retry_task(task[0], 1, 99, "late"));
  EXPECT_EQ(store->tasks.tasks_of_kind("check_run")[0].status, TaskStatus::kDone);
  EXPECT_EQ(store->tasks.tasks_of_kind("check_run")[0].attempts, 2);
  // A lease that ran out but that nobody took over still completes: no needless resend.
  o.repo = "b/y";
  ASSERT_TRUE(store->outbox.accept_delivery({"d2", "push", "", "abc", 0, 1000, "{}", {}}, {o}));
  auto late = store->outbox.claim_due(1000, 1, 10);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_TRUE(mark_delivered(*store, late[0], 1, 99999));
}

// A group commit: the outcomes of several workers in one transaction, each applied only under
// its own lease, so one stale outcome in the batch changes nothing and spoils nothing else.
TEST_P(StoreLateWriterTest, ABatchOfOutcomesAppliesEachUnderItsOwnLease) {
  auto store = open_test_store(GetParam());
  std::vector<OutboxItem> rows;
  for (const char* repo : {"a/x", "b/y", "c/z"}) {
    OutboxItem o;
    o.repo = repo;
    o.event_type = "push";
    o.created_ms = o.next_attempt_ms = 1000;
    o.deadline_ms = 100000;
    rows.push_back(o);
  }
  ASSERT_TRUE(store->outbox.accept_delivery({"d1", "push", "", "abc", 0, 1000, "{}", {}}, rows));
  auto claimed = store->outbox.claim_due(1000, 3, 10);
  ASSERT_EQ(claimed.size(), 3u);
  EXPECT_EQ(claimed[0].lease, claimed[2].lease);         // one claim, one lease
  auto taken = store->outbox.claim_due(1020, 1, 10000);  // the leases ran out; a/x is taken over
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].repo, "a/x");
  std::vector<bool> applied =
      store->outbox.settle_outbox({{OutboxOutcome::kDelivered, claimed[0], 1, 1030, ""},
                                   {OutboxOutcome::kRetry, claimed[1], 1, 5000, "HTTP 502"},
                                   {OutboxOutcome::kFailed, claimed[2], 1, 1030, "HTTP 422"}});
  EXPECT_EQ(applied, (std::vector<bool>{false, true, true}));
  auto by_repo = [&](const std::string& repo) {
    for (const auto& r : store->outbox.outbox_for("d1"))
      if (r.repo == repo) return r;
    return OutboxItem{};
  };
  EXPECT_EQ(by_repo("a/x").status, OutboxStatus::kPending);  // still the new holder's
  EXPECT_EQ(by_repo("a/x").lease, taken[0].lease);
  EXPECT_EQ(by_repo("b/y").next_attempt_ms, 5000);
  EXPECT_EQ(by_repo("b/y").last_error, "HTTP 502");
  EXPECT_EQ(by_repo("c/z").status, OutboxStatus::kFailed);
  EXPECT_TRUE(store->outbox.settle_outbox({}).empty());
}

// Three relays on one store are three Store objects on one database. With SQLite that is three
// connections to one file (what an operator must not do with relays, but the store's own
// guarantees hold there too); with PostgreSQL, three connection pools, as three processes have.
class StoreReplicasTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string uri = fresh_store_uri(GetParam());
    for (int i = 0; i < 3; ++i) replicas_.push_back(open_store(uri));
  }
  std::vector<std::unique_ptr<Store>> replicas_;
};

TEST_P(StoreReplicasTest, NoRowIsSentTwiceAtOnceAndOnlyItsHolderCompletesIt) {
  std::vector<OutboxItem> rows;
  for (int i = 0; i < 300; ++i) {
    OutboxItem o;
    o.repo = fmt::format("org/r{}", i);
    o.event_type = "pull_request";
    o.callback_token = "t";
    o.created_ms = o.next_attempt_ms = 0;
    o.deadline_ms = 1LL << 50;
    rows.push_back(o);
  }
  ASSERT_TRUE(replicas_[0]->outbox.accept_delivery(
      {"d1", "pull_request", "opened", "abc", 1, 0, "{}", {}}, rows));
  // Four dispatch workers per replica, claiming by the wall clock. A third of the "sends" outlive
  // their lease, so rows are taken over while their first holder is still sending.
  constexpr int64_t kLeaseMs = 40;
  std::mutex mu;
  struct Send {
    int64_t start_us, end_us, claimed_ms;
    bool operator<(const Send& o) const { return start_us < o.start_us; }
  };
  std::map<int64_t, std::vector<Send>> sends;
  std::map<int64_t, int> completions;
  std::atomic<int> lost{0};
  auto steady = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 12; ++w)
    workers.emplace_back([&, w] {
      Store& store = *replicas_[w % 3];
      uint64_t seed = 12345 + w;
      for (int idle = 0; idle < 20;) {
        auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        auto got = store.outbox.claim_due(now, 1, kLeaseMs);
        if (got.empty()) {
          ++idle;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        idle = 0;
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        bool slow = (seed >> 33) % 3 == 0;
        int64_t start = steady();
        std::this_thread::sleep_for(std::chrono::milliseconds(slow ? kLeaseMs + 30 : 2));
        int64_t end = steady();
        auto done = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
        bool kept = mark_delivered(store, got[0], got[0].attempts + 1, done);
        std::lock_guard lock(mu);
        sends[got[0].id].push_back({start, end, now});
        if (kept)
          completions[got[0].id]++;
        else
          lost++;
      }
    });
  for (auto& t : workers) t.join();
  // Every row delivered, each recorded by exactly one worker: the one holding it at the time.
  auto stored = replicas_[1]->outbox.outbox_for("d1");
  ASSERT_EQ(stored.size(), 300u);
  for (const auto& o : stored) {
    EXPECT_EQ(o.status, OutboxStatus::kDelivered) << o.repo;
    EXPECT_EQ(completions[o.id], 1) << o.repo;
  }
  // Overlapping sends of one row happen only after a lease ran out: never while a lease held.
  int overlaps = 0, resent = 0;
  for (auto& [id, spans] : sends) {
    std::sort(spans.begin(), spans.end());
    resent += static_cast<int>(spans.size()) - 1;
    for (size_t i = 1; i < spans.size(); ++i) {
      if (spans[i].start_us < spans[i - 1].end_us) {
        ++overlaps;
        EXPECT_GE(spans[i].claimed_ms - spans[i - 1].claimed_ms, kLeaseMs)
            << "row " << id << " was claimed again before its lease ran out";
      }
    }
  }
  EXPECT_EQ(lost.load(), resent);  // each late worker learned its row was taken over
  EXPECT_GT(overlaps, 0);          // the test did make leases run out
  // With a lease longer than any send (the relay's: three request timeouts), nothing overlaps.
  ASSERT_TRUE(replicas_[0]->outbox.accept_delivery(
      {"d2", "pull_request", "opened", "abc", 1, 0, "{}", {}}, rows));
  std::map<int64_t, int> claimed;
  std::vector<std::thread> holders;
  for (int w = 0; w < 12; ++w)
    holders.emplace_back([&, w] {
      for (;;) {
        auto got = replicas_[w % 3]->outbox.claim_due(1LL << 40, 1, 1LL << 40);
        if (got.empty()) return;
        {
          std::lock_guard lock(mu);
          claimed[got[0].id]++;
        }
        EXPECT_TRUE(mark_delivered(*replicas_[(w + 1) % 3], got[0], 1, 1));
      }
    });
  for (auto& t : holders) t.join();
  EXPECT_EQ(claimed.size(), 300u);
  for (auto& [id, n] : claimed) EXPECT_EQ(n, 1) << id;
}

TEST_P(StoreReplicasTest, OneCallbackRateLimitHoldsAcrossReplicas) {
  // 12 threads over three replicas ask 30 times each within one second: exactly the limit gets
  // in, however the requests interleave.
  std::atomic<int> admitted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i)
        (replicas_[t % 3]->shared.rate_limit("org/busy", 100500, 50, 60) == 0 ? admitted
                                                                              : refused)++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 50);
  EXPECT_EQ(refused.load(), 310);
  // Refusals do not count, and Retry-After is when the oldest second leaves the window.
  EXPECT_EQ(replicas_[2]->shared.rate_limit("org/busy", 159000, 50, 60),
            1);  // 100 s + 60 s - 159 s
  EXPECT_EQ(replicas_[1]->shared.rate_limit("org/other", 159000, 50, 60), 0);  // per key
  EXPECT_EQ(replicas_[0]->shared.rate_limit("org/busy", 160000, 50, 60), 0);  // the window moved on
}

TEST_P(StoreReplicasTest, TheRateWindowSlidesBySecondsWithRetryAfter) {
  Store& r = *replicas_[0];
  EXPECT_EQ(r.shared.rate_limit("a", 1000, 3, 60), 0);
  EXPECT_EQ(r.shared.rate_limit("a", 2000, 3, 60), 0);
  EXPECT_EQ(r.shared.rate_limit("a", 3000, 3, 60), 0);
  EXPECT_EQ(r.shared.rate_limit("a", 4000, 3, 60), 57);  // the hit of second 1 leaves at 61 s
  EXPECT_EQ(r.shared.rate_limit("b", 4000, 3, 60), 0);   // per key
  EXPECT_EQ(replicas_[1]->shared.rate_limit("a", 61000, 3, 60), 0);
  EXPECT_EQ(replicas_[2]->shared.rate_limit("a", 61500, 3, 60),
            1);  // second 2 leaves at 62 s: 0.5 s
  EXPECT_EQ(r.shared.rate_limit("a", 62000, 3, 60), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreReplicasTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Backends, StoreLateWriterTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
