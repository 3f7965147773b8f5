// The relay store: every statement once, run by the SQL layer on SQLite or PostgreSQL.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "base/error.h"
#include "relay_store/hud_rollup.h"
#include "relay_store/migrations.h"
#include "relay_store/store.h"
#include "relay_store/store_tools.h"
#include "sql/migrate.h"
#include "sql/sql_db.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// Enough for the dispatcher threads and a few concurrent HTTP handlers; more would only hold
// server slots that sit idle.
constexpr size_t kPostgresPoolSize = 4;
// The most one transaction waits, for a connection and for locks, before it fails and the
// request gets its 503 (README, "Reliability"): short enough that the answer comes well within
// GitHub's 10 s delivery timeout.
constexpr int kTransactionWaitMs = 2000;

// Serializes task claims, and task inserts against claims (see insert_tasks and claim_tasks).
constexpr int64_t kTaskLockKey = 0x6f6f74636974;  // "ootcit"
// Serializes record_level's read-then-append across replicas.
constexpr int64_t kLevelLockKey = 0x6f6f74636976;  // "ootciv"
// With a repo's hash in the low bits: serializes one repo's callback rate checks across replicas.
constexpr int64_t kRateLockKey = 0x6f6f746372000000;  // "ootcr" << 24
// With a hash of (repo, run, job) in the low bits: serializes the attempts of one nightly job.
constexpr int64_t kAttemptLockKey = 0x6f6f746361000000;  // "ootca" << 24

// FNV-1a: the same value in every replica, which std::hash does not promise.
int64_t stable_hash24(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h & 0xffffff;
}

// A claim's lease: the rows it leased can be completed only with it. 128 random bits, so two
// replicas (or two claims of one process) never hold the same one; random_device is getrandom(2).
std::string lease_token() {
  thread_local std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

// Rows per INSERT in insert_jobs_bulk: 35 columns each stays far below both dialects'
// parameter limits (SQLite 32,766; PostgreSQL 65,535).
constexpr size_t kBulkRows = 200;

constexpr const char* kOutboxColumns =
    "id, delivery_id, repo, event_type, callback_token, status, attempts, created_ms, "
    "next_attempt_ms, deadline_ms, delivered_ms, last_error, lease";

OutboxItem read_outbox(const SqlRow& r) {
  OutboxItem o;
  o.id = r.i64(0);
  o.delivery_id = r.text(1);
  o.repo = r.text(2);
  o.event_type = r.text(3);
  o.callback_token = r.text(4);
  o.status = parse_outbox_status(r.text(5));
  o.attempts = static_cast<int>(r.i64(6));
  o.created_ms = r.i64(7);
  o.next_attempt_ms = r.i64(8);
  o.deadline_ms = r.i64(9);
  o.delivered_ms = r.i64(10);
  o.last_error = r.text(11);
  o.lease = r.text(12);
  return o;
}

constexpr const char* kJobColumns =
    "key, delivery_id, repo, run_id, run_attempt, job_name, workflow_name, event_type, head_sha, "
    "pr_number, level, status, conclusion, dispatched_ms, in_progress_ms, completed_ms, "
    "queue_time_ms, execution_time_ms, in_progress_hash, completed_hash, tests_passed, "
    "tests_failed, tests_skipped, tests_total, workflow_url, check_run_id, artifact_url, "
    "check_run_created, last_body, failed_tests_json, triage_json, created_ms, verdict_category, "
    "verdict_confidence, superseded";
constexpr int kJobColumnCount = 35;

// Appends the job's columns, in kJobColumns order, to `params`.
void add_job(std::vector<SqlParam>& params, const JobRecord& j) {
  params.insert(params.end(), {j.key,
                               j.delivery_id,
                               j.repo,
                               j.run_id,
                               j.run_attempt,
                               j.job_name,
                               j.workflow_name,
                               j.event_type,
                               j.head_sha,
                               j.pr_number,
                               j.level,
                               j.status,
                               j.conclusion,
                               j.dispatched_ms,
                               j.in_progress_ms,
                               j.completed_ms,
                               j.queue_time_ms,
                               j.execution_time_ms,
                               j.in_progress_hash,
                               j.completed_hash,
                               j.tests_passed,
                               j.tests_failed,
                               j.tests_skipped,
                               j.tests_total,
                               j.workflow_url,
                               j.check_run_id,
                               j.artifact_url,
                               int64_t{j.check_run_created},
                               j.last_body,
                               j.failed_tests_json,
                               j.triage_json,
                               j.created_ms,
                               j.verdict_category,
                               j.verdict_confidence,
                               int64_t{j.superseded}});
}

JobRecord read_job(const SqlRow& r) {
  JobRecord j;
  int i = 0;
  j.key = r.text(i++);
  j.delivery_id = r.text(i++);
  j.repo = r.text(i++);
  j.run_id = r.text(i++);
  j.run_attempt = r.i64(i++);
  j.job_name = r.text(i++);
  j.workflow_name = r.text(i++);
  j.event_type = r.text(i++);
  j.head_sha = r.text(i++);
  j.pr_number = r.i64(i++);
  j.level = r.text(i++);
  j.status = r.text(i++);
  j.conclusion = r.text(i++);
  j.dispatched_ms = r.i64(i++);
  j.in_progress_ms = r.i64(i++);
  j.completed_ms = r.i64(i++);
  j.queue_time_ms = r.i64(i++);
  j.execution_time_ms = r.i64(i++);
  j.in_progress_hash = r.text(i++);
  j.completed_hash = r.text(i++);
  j.tests_passed = r.i64(i++);
  j.tests_failed = r.i64(i++);
  j.tests_skipped = r.i64(i++);
  j.tests_total = r.i64(i++);
  j.workflow_url = r.text(i++);
  j.check_run_id = r.text(i++);
  j.artifact_url = r.text(i++);
  j.check_run_created = r.i64(i++) != 0;
  j.last_body = r.text(i++);
  j.failed_tests_json = r.text(i++);
  j.triage_json = r.text(i++);
  j.created_ms = r.i64(i++);
  j.verdict_category = r.text(i++);
  j.verdict_confidence = r.text(i++);
  j.superseded = r.i64(i++) != 0;
  return j;
}

constexpr const char* kTaskColumns =
    "id, kind, ordering_key, payload, attempts, created_ms, next_attempt_ms, status, last_error, "
    "lease";

TaskItem read_task(const SqlRow& r) {
  TaskItem t;
  t.id = r.i64(0);
  t.kind = r.text(1);
  t.ordering_key = r.text(2);
  t.payload = r.text(3);
  t.attempts = static_cast<int>(r.i64(4));
  t.created_ms = r.i64(5);
  t.next_attempt_ms = r.i64(6);
  t.status = parse_task_status(r.text(7));
  t.last_error = r.text(8);
  t.lease = r.text(9);
  return t;
}

int64_t read_i64(const SqlRow& r) {
  return r.i64(0);
}

// The HUD aggregates over job rows: for the part of a window before its first whole rollup
// hour. Text is compared and sorted with the C collation so MAX(level) and the ORDER BYs agree in
// both dialects. {} is the event-type list, then an optional repo condition. The PR column is
// counted from hud_pr_latest instead (a distinct count does not add up across pieces).
constexpr const char* kRepoStatsSql =
    "SELECT repo, MAX(level COLLATE \"C\"), COUNT(*), "
    "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'cancelled' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN status = 'in_progress' THEN 1 ELSE 0 END), 0, "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN queue_time_ms ELSE 0 END), "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms > 10800000 THEN 1 ELSE 0 END), "
    "MIN(created_ms), MAX(created_ms), MAX(CASE WHEN execution_time_ms >= 0 THEN "
    "execution_time_ms ELSE -1 END), "
    "SUM(CASE WHEN conclusion = 'failure' AND verdict_category = 'upstream' AND "
    "verdict_confidence = 'high' THEN 1 ELSE 0 END) "
    "FROM jobs WHERE created_ms >= ? AND created_ms < ? AND event_type IN {} AND superseded = 0 "
    "{} GROUP BY repo";

// The same figures from the hourly rollups, in the same column order. A rollup row a job left
// (jobs = 0) keeps nothing that counts.
constexpr const char* kRollupStatsSql =
    "SELECT repo, MAX(CASE WHEN jobs > 0 THEN level END COLLATE \"C\"), SUM(jobs), SUM(success), "
    "SUM(failure), SUM(timed_out), SUM(cancelled), SUM(in_progress), SUM(prs_last), "
    "SUM(queue_sum_ms), SUM(queue_n), SUM(exec_sum_ms), SUM(exec_n), SUM(overruns), "
    "MIN(CASE WHEN jobs > 0 THEN first_ms END), MAX(CASE WHEN jobs > 0 THEN last_ms END), "
    "MAX(CASE WHEN jobs > 0 THEN exec_max_ms END), SUM(failure_upstream) "
    "FROM hud_hourly WHERE job_class = ? AND hour >= ? {} GROUP BY repo HAVING SUM(jobs) > 0";

// PRs whose newest job is in [?, ?): the window's PRs before its first whole hour.
constexpr const char* kEdgePrsSql =
    "SELECT repo, COUNT(*) FROM hud_pr_latest WHERE job_class = ? AND last_ms >= ? AND "
    "last_ms < ? {} GROUP BY repo";

RepoStats read_repo_stats(const SqlRow& row) {
  RepoStats r;
  int i = 0;
  r.repo = row.text(i++);
  r.level = row.text(i++);
  for (int64_t* v : {&r.jobs, &r.success, &r.failure, &r.timed_out, &r.cancelled, &r.in_progress,
                     &r.prs, &r.queue_sum_ms, &r.queue_n, &r.exec_sum_ms, &r.exec_n, &r.overruns,
                     &r.first_ms, &r.last_ms, &r.exec_max_ms, &r.failure_upstream})
    *v = row.i64(i++);
  return r;
}

// Adds one piece of a window to the repo's figures so far.
void merge_stats(RepoStats& into, const RepoStats& piece) {
  if (into.repo.empty()) {
    into = piece;
    return;
  }
  into.level = std::max(into.level, piece.level);
  for (auto [a, b] : {std::pair{&into.jobs, piece.jobs},
                      {&into.success, piece.success},
                      {&into.failure, piece.failure},
                      {&into.timed_out, piece.timed_out},
                      {&into.cancelled, piece.cancelled},
                      {&into.in_progress, piece.in_progress},
                      {&into.prs, piece.prs},
                      {&into.queue_sum_ms, piece.queue_sum_ms},
                      {&into.queue_n, piece.queue_n},
                      {&into.exec_sum_ms, piece.exec_sum_ms},
                      {&into.exec_n, piece.exec_n},
                      {&into.overruns, piece.overruns},
                      {&into.failure_upstream, piece.failure_upstream}})
    *a += b;
  into.first_ms = std::min(into.first_ms, piece.first_ms);
  into.last_ms = std::max(into.last_ms, piece.last_ms);
  into.exec_max_ms = std::max(into.exec_max_ms, piece.exec_max_ms);
}

// The columns a job's rollup contribution depends on, and a reader that fills only those.
constexpr const char* kRollupColumns =
    "repo, event_type, pr_number, created_ms, level, status, conclusion, queue_time_ms, "
    "execution_time_ms, verdict_category, verdict_confidence, superseded";
constexpr int kRollupColumnCount = 12;

JobRecord read_rollup_columns(const SqlRow& r) {
  JobRecord j;
  j.repo = r.text(0);
  j.event_type = r.text(1);
  j.pr_number = r.i64(2);
  j.created_ms = r.i64(3);
  j.level = r.text(4);
  j.status = r.text(5);
  j.conclusion = r.text(6);
  j.queue_time_ms = r.i64(7);
  j.execution_time_ms = r.i64(8);
  j.verdict_category = r.text(9);
  j.verdict_confidence = r.text(10);
  j.superseded = r.i64(11) != 0;
  return j;
}

// Adds a delta to an hourly rollup row; the dialect decides the scalar MIN and MAX.
std::string hour_upsert_sql(SqlDialect d) {
  return fmt::format(
      "INSERT INTO hud_hourly (job_class, hour, repo, level, jobs, success, failure, "
      "timed_out, cancelled, in_progress, queue_sum_ms, queue_n, exec_sum_ms, exec_n, "
      "overruns, prs_last, first_ms, last_ms, exec_max_ms, failure_upstream) VALUES ({}) "
      "ON CONFLICT (job_class, hour, repo) "
      "DO UPDATE SET level = {}(hud_hourly.level COLLATE \"C\", excluded.level), "
      "jobs = hud_hourly.jobs + excluded.jobs, "
      "success = hud_hourly.success + excluded.success, "
      "failure = hud_hourly.failure + excluded.failure, "
      "timed_out = hud_hourly.timed_out + excluded.timed_out, "
      "cancelled = hud_hourly.cancelled + excluded.cancelled, "
      "in_progress = hud_hourly.in_progress + excluded.in_progress, "
      "queue_sum_ms = hud_hourly.queue_sum_ms + excluded.queue_sum_ms, "
      "queue_n = hud_hourly.queue_n + excluded.queue_n, "
      "exec_sum_ms = hud_hourly.exec_sum_ms + excluded.exec_sum_ms, "
      "exec_n = hud_hourly.exec_n + excluded.exec_n, "
      "overruns = hud_hourly.overruns + excluded.overruns, "
      "prs_last = hud_hourly.prs_last + excluded.prs_last, "
      "first_ms = {}(hud_hourly.first_ms, excluded.first_ms), "
      "last_ms = {}(hud_hourly.last_ms, excluded.last_ms), "
      "exec_max_ms = {}(hud_hourly.exec_max_ms, excluded.exec_max_ms), "
      "failure_upstream = hud_hourly.failure_upstream + excluded.failure_upstream",
      placeholder_list(20), greatest(d), least(d), greatest(d), greatest(d));
}

constexpr const char* kCheckRunWantedInsert =
    "INSERT INTO check_run_wanted (head_sha, repo, created_ms) VALUES (?,?,?) "
    "ON CONFLICT DO NOTHING";

constexpr const char* kDetailSinceKey = "hud_detail_since";

Demotion read_demotion(const SqlRow& r) {
  return {r.text(0), r.i64(1), r.i64(2), r.text(3)};
}

class SqlStore : public Store {
  // Defined first: their return types are deduced.
  // One statement in its own write transaction.
  void write(const char* op, std::string_view sql, SqlParams params) {
    db_->write(op, [&](SqlTx& tx) { tx.exec(sql, params); });
  }
  // The same, saying whether it changed a row.
  bool write_changed(const char* op, std::string_view sql, SqlParams params) {
    return db_->write(op, [&](SqlTx& tx) { return tx.exec(sql, params) > 0; });
  }

  template <typename Read>
  auto read_all(const char* op, std::string_view sql, SqlParams params, Read&& read) {
    return db_->read(op, [&](SqlTx& tx) { return tx.all(sql, params, read); });
  }

  template <typename Read>
  auto read_first(const char* op, std::string_view sql, SqlParams params, Read&& read) {
    return db_->read(op, [&](SqlTx& tx) { return tx.first(sql, params, read); });
  }

 public:
  explicit SqlStore(std::unique_ptr<SqlDb> db)
      : db_(std::move(db)), d_(db_->dialect()), hour_upsert_sql_(hour_upsert_sql(d_)) {
    migrate(*db_, relay_schema(d_));
  }

  int schema_version() override { return ootci::schema_version(*db_); }

  bool accept_delivery(const DeliveryRecord& d, const std::vector<OutboxItem>& outbox) override {
    return db_->write("accept_delivery", [&](SqlTx& tx) {
      if (tx.exec("INSERT INTO deliveries (delivery_id, event, action, head_sha, pr_number, "
                  "received_ms, body) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                  {d.delivery_id, d.event, d.action, d.head_sha, d.pr_number, d.received_ms,
                   d.body}) == 0)
        return false;  // a redelivery: nothing was written
      for (const OutboxItem& o : outbox)
        tx.exec(
            "INSERT INTO outbox (delivery_id, repo, event_type, callback_token, status, "
            "created_ms, next_attempt_ms, deadline_ms) VALUES (?,?,?,?,'pending',?,?,?)",
            {d.delivery_id, o.repo, o.event_type, o.callback_token, o.created_ms, o.next_attempt_ms,
             o.deadline_ms});
      for (const std::string& repo : d.check_run_repos)
        tx.exec(kCheckRunWantedInsert, {d.head_sha, repo, d.received_ms});
      return true;
    });
  }

  std::optional<DeliveryRecord> get_delivery(const std::string& id, bool with_body) override {
    return db_->read("get_delivery", [&](SqlTx& tx) {
      return tx.first(
          with_body ? "SELECT delivery_id, event, action, head_sha, pr_number, received_ms, body "
                      "FROM deliveries WHERE delivery_id = ?"
                    : "SELECT delivery_id, event, action, head_sha, pr_number, received_ms, '' "
                      "FROM deliveries WHERE delivery_id = ?",
          {id}, [](const SqlRow& r) {
            return DeliveryRecord{r.text(0), r.text(1), r.text(2), r.text(3),
                                  r.i64(4),  r.i64(5),  r.text(6), {}};
          });
    });
  }

  std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) override {
    return db_->write("claim_due", [&](SqlTx& tx) {
      auto out = tx.all(fmt::format("UPDATE outbox SET leased = 1, lease = ?, next_attempt_ms = ? "
                                    "WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' "
                                    "AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id "
                                    "LIMIT ?{}) RETURNING {}",
                                    skip_locked(d_), kOutboxColumns),
                        {lease_token(), now_ms + lease_ms, now_ms, sql_limit(limit)}, read_outbox);
      // RETURNING has no order.
      std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
      return out;
    });
  }

  std::vector<bool> settle_outbox(const std::vector<OutboxOutcome>& outcomes) override {
    return db_->write("settle_outbox", [&](SqlTx& tx) {
      std::vector<bool> applied;
      applied.reserve(outcomes.size());
      for (const auto& o : outcomes) {
        const auto& it = o.item;
        int64_t n = 0;
        switch (o.kind) {
          case OutboxOutcome::kDelivered:
            n = tx.exec(
                "UPDATE outbox SET status = 'delivered', leased = 0, lease = '', attempts = ?, "
                "delivered_ms = ?, last_error = '' WHERE id = ? AND lease = ? AND status = "
                "'pending'",
                {o.attempts, o.at_ms, it.id, it.lease});
            break;
          case OutboxOutcome::kRetry:
            n = tx.exec(
                "UPDATE outbox SET leased = 0, lease = '', attempts = ?, next_attempt_ms = ?, "
                "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
                {o.attempts, o.at_ms, o.error, it.id, it.lease});
            break;
          case OutboxOutcome::kFailed:
            n = tx.exec(
                "UPDATE outbox SET status = 'failed', leased = 0, lease = '', attempts = ?, "
                "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
                {o.attempts, o.error, it.id, it.lease});
            break;
        }
        applied.push_back(n > 0);
      }
      return applied;
    });
  }

  void release_leases(int64_t now_ms) override {
    write("release_leases",
          "UPDATE outbox SET leased = 0, lease = '', next_attempt_ms = ? WHERE leased = 1",
          {now_ms});
  }

  std::optional<int64_t> next_due_ms() override {
    return db_->read("next_due_ms", [&](SqlTx& tx) {
      std::optional<int64_t> out;
      tx.each("SELECT MIN(next_attempt_ms) FROM outbox WHERE status = 'pending'", {},
              [&](const SqlRow& r) {
                if (!r.is_null(0)) out = r.i64(0);
              });
      return out;
    });
  }

  std::vector<OutboxItem> outbox_for(const std::string& delivery_id) override {
    return read_all(
        "outbox_for",
        fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? ORDER BY repo COLLATE \"C\"",
                    kOutboxColumns),
        {delivery_id}, read_outbox);
  }

  OutboxCounts outbox_counts() override {
    return db_->read("outbox_counts", [&](SqlTx& tx) {
      OutboxCounts c;
      tx.each("SELECT status, COUNT(*) FROM outbox GROUP BY status", {}, [&](const SqlRow& r) {
        OutboxStatus st = parse_outbox_status(r.text(0));
        (st == OutboxStatus::kPending     ? c.pending
         : st == OutboxStatus::kDelivered ? c.delivered
                                          : c.failed) = r.i64(1);
      });
      return c;
    });
  }

  void set_check_run_wanted(const std::string& sha, const std::string& repo,
                            int64_t now_ms) override {
    write("set_check_run_wanted", kCheckRunWantedInsert, {sha, repo, now_ms});
  }

  bool check_run_wanted(const std::string& sha, const std::string& repo) override {
    return !read_all("check_run_wanted",
                     "SELECT 1 FROM check_run_wanted WHERE head_sha = ? AND repo = ?", {sha, repo},
                     read_i64)
                .empty();
  }

  std::optional<OutboxItem> dispatch_record(const std::string& delivery_id,
                                            const std::string& repo) override {
    return read_first(
        "dispatch_record",
        fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? AND repo = ?", kOutboxColumns),
        {delivery_id, repo}, read_outbox);
  }

  std::optional<JobRecord> get_job(const std::string& key) override {
    return read_first("get_job", fmt::format("SELECT {} FROM jobs WHERE key = ?", kJobColumns),
                      {key}, read_job);
  }

  bool insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks) override {
    return db_->write("insert_job", [&](SqlTx& tx) {
      RollupDeltas deltas;
      if (!insert_one(tx, job, deltas)) return false;
      write_rollups(tx, deltas);
      insert_tasks(tx, tasks);
      return true;
    });
  }

  bool update_job(const JobRecord& job, const std::string& expected_status,
                  const std::vector<TaskItem>& tasks,
                  std::optional<bool> expected_check_run_created) override {
    return db_->write("update_job", [&](SqlTx& tx) {
      // Replace the whole row, but only if nobody moved it since it was read. In PostgreSQL the
      // row lock the UPDATE takes makes a concurrent update with the same expectation wait,
      // then match 0 rows.
      // The row as it was, for the rollups: locked (PostgreSQL), so nobody changes it between
      // this read and the update.
      auto old = tx.first(
          fmt::format("SELECT {} FROM jobs WHERE key = ?{}", kRollupColumns, for_update(d_)),
          {job.key}, read_rollup_columns);
      if (!old) return false;
      // Whether a later nightly attempt superseded the job is the store's to say, not the
      // caller's.
      JobRecord j = job;
      j.superseded = old->superseded;
      std::vector<SqlParam> params;
      add_job(params, j);
      int64_t flag = expected_check_run_created ? int64_t{*expected_check_run_created} : -1;
      params.insert(params.end(), {job.key, expected_status, flag, flag});
      if (tx.exec(fmt::format("UPDATE jobs SET ({}) = ({}) WHERE key = ? AND status = ? AND "
                              "(? < 0 OR check_run_created = ?)",
                              kJobColumns, placeholder_list(kJobColumnCount)),
                  params) == 0)
        return false;
      RollupDeltas deltas;
      deltas.add_job(*old, -1);
      deltas.add_job(j, +1);
      track_prs(tx, {&j}, deltas);
      write_rollups(tx, deltas);
      insert_tasks(tx, tasks);
      return true;
    });
  }

  std::vector<JobRecord> jobs_for_sha(const std::string& head_sha) override {
    return read_all("jobs_for_sha",
                    fmt::format("SELECT {} FROM jobs WHERE head_sha = ? ORDER BY key COLLATE \"C\"",
                                kJobColumns),
                    {head_sha}, read_job);
  }

  int64_t count_overdue_jobs(int64_t before_ms) override {
    return read_first(
               "count_overdue_jobs",
               "SELECT COUNT(*) FROM jobs WHERE status = 'in_progress' AND in_progress_ms < ?",
               {before_ms}, read_i64)
        .value_or(0);
  }

  std::vector<JobRecord> overdue_jobs(int64_t before_ms, int limit) override {
    return read_all("overdue_jobs",
                    fmt::format("SELECT {} FROM jobs WHERE status = 'in_progress' AND "
                                "in_progress_ms < ? ORDER BY in_progress_ms LIMIT ?",
                                kJobColumns),
                    {before_ms, sql_limit(limit)}, read_job);
  }

  void enqueue_tasks(const std::vector<TaskItem>& tasks) override {
    db_->write("enqueue_tasks", [&](SqlTx& tx) { insert_tasks(tx, tasks); });
  }

  std::vector<TaskItem> claim_tasks(int64_t now_ms, int limit, int64_t lease_ms) override {
    return db_->write("claim_tasks", [&](SqlTx& tx) {
      // PostgreSQL claimers serialize on the task lock (cheap at this task volume) so the
      // per-key "oldest pending" check never races another claimer's snapshot; a separate
      // statement, so the claim's READ COMMITTED snapshot is taken after the lock is held.
      tx.lock(kTaskLockKey);
      // Only the oldest pending task of each ordering key is eligible; a leased one blocks its
      // key.
      auto out = tx.all(
          fmt::format("UPDATE tasks SET leased = 1, lease = ?, next_attempt_ms = ? WHERE id IN "
                      "(SELECT t.id FROM tasks t WHERE t.status = 'pending' AND "
                      "t.next_attempt_ms <= ? AND NOT EXISTS (SELECT 1 FROM tasks e WHERE "
                      "e.ordering_key = t.ordering_key AND e.status = 'pending' AND "
                      "e.id < t.id) ORDER BY t.id LIMIT ?{}) RETURNING {}",
                      skip_locked(d_), kTaskColumns),
          {lease_token(), now_ms + lease_ms, now_ms, sql_limit(limit)}, read_task);
      std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
      return out;
    });
  }

  bool complete_task(const TaskItem& t, int attempts) override {
    return write_changed("complete_task",
                         "UPDATE tasks SET status = 'done', leased = 0, lease = '', attempts = ?, "
                         "last_error = '' WHERE id = ? AND lease = ? AND status = 'pending'",
                         {attempts, t.id, t.lease});
  }

  bool retry_task(const TaskItem& t, int attempts, int64_t next_ms,
                  const std::string& error) override {
    return write_changed(
        "retry_task",
        "UPDATE tasks SET leased = 0, lease = '', attempts = ?, next_attempt_ms = ?, "
        "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
        {attempts, next_ms, error, t.id, t.lease});
  }

  bool fail_task(const TaskItem& t, int attempts, const std::string& error) override {
    return write_changed("fail_task",
                         "UPDATE tasks SET status = 'failed', leased = 0, lease = '', attempts = "
                         "?, last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
                         {attempts, error, t.id, t.lease});
  }

  int64_t rate_limit(const std::string& key, int64_t now_ms, int limit, int64_t window_s) override {
    return db_->write("rate_limit", [&](SqlTx& tx) -> int64_t {
      tx.lock(kRateLockKey | stable_hash24(key));
      int64_t now_s = now_ms / 1000;
      tx.exec("DELETE FROM rate_hits WHERE key = ? AND second <= ?", {key, now_s - window_s});
      auto [n, oldest] = *tx.first("SELECT SUM(hits), MIN(second) FROM rate_hits WHERE key = ?",
                                   {key}, [](const SqlRow& r) {
                                     return std::pair{r.i64(0), r.i64(1)};
                                   });
      if (n < limit) {
        tx.exec(
            "INSERT INTO rate_hits (key, second, hits) VALUES (?, ?, 1) "
            "ON CONFLICT (key, second) DO UPDATE SET hits = rate_hits.hits + 1",
            {key, now_s});
        return 0;
      }
      // Over the limit: the oldest second's hits leave the window first.
      return std::max<int64_t>(1, ((oldest + window_s) * 1000 - now_ms + 999) / 1000);
    });
  }

  TaskCounts task_counts() override {
    return db_->read("task_counts", [&](SqlTx& tx) {
      TaskCounts c;
      tx.each("SELECT status, COUNT(*) FROM tasks GROUP BY status", {}, [&](const SqlRow& r) {
        TaskStatus st = parse_task_status(r.text(0));
        (st == TaskStatus::kPending ? c.pending
         : st == TaskStatus::kDone  ? c.done
                                    : c.failed) += r.i64(1);
      });
      return c;
    });
  }

  void set_meta(const std::string& key, const std::string& value) override {
    write("set_meta",
          "INSERT INTO meta (key, value) VALUES (?, ?) "
          "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          {key, value});
  }

  std::optional<std::string> get_meta(const std::string& key) override {
    return read_first("get_meta", "SELECT value FROM meta WHERE key = ?", {key},
                      [](const SqlRow& r) { return r.text(0); });
  }

  std::vector<RepoStats> repo_stats(int64_t since_ms, JobFilter f,
                                    const std::string& repo) override {
    return db_->read("repo_stats", [&](SqlTx& tx) { return stats_since(tx, since_ms, f, repo); });
  }

  std::vector<DailyStats> daily_stats(int64_t since_ms, JobFilter f) override {
    int64_t hour = first_whole_hour(since_ms);
    return db_->read("daily_stats", [&](SqlTx& tx) {
      std::map<std::pair<std::string, int64_t>, DailyStats> by_day;
      auto add = [&](const SqlRow& r) {
        DailyStats& d = by_day[{r.text(0), r.i64(1)}];
        d.repo = r.text(0), d.day = r.i64(1);
        d.jobs += r.i64(2), d.success += r.i64(3), d.failure += r.i64(4);
      };
      tx.each(
          "SELECT repo, hour / 24, SUM(jobs), SUM(success), SUM(failure) FROM hud_hourly "
          "WHERE job_class = ? AND hour >= ? GROUP BY repo, hour / 24 HAVING SUM(jobs) > 0",
          {job_class(f), hour}, add);
      // created_ms is an integer, so / is integer division in both dialects.
      tx.each(fmt::format("SELECT repo, created_ms / 86400000, COUNT(*), "
                          "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END), "
                          "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END) FROM jobs "
                          "WHERE created_ms >= ? AND created_ms < ? AND event_type IN {} AND "
                          "superseded = 0 GROUP BY repo, created_ms / 86400000",
                          event_types_sql(f)),
              {since_ms, hour * kRollupHourMs}, add);
      std::vector<DailyStats> out;
      for (auto& [key, d] : by_day) out.push_back(d);
      return out;
    });
  }

  std::vector<int64_t> repo_prs(const std::string& repo, int64_t since_ms, int limit, int offset,
                                int64_t* total) override {
    return db_->read("repo_prs", [&](SqlTx& tx) {
      if (total) {
        auto stats = stats_since(tx, since_ms, JobFilter::kPullRequest, repo);
        *total = stats.empty() ? 0 : stats[0].prs;
      }
      return tx.all(
          "SELECT pr_number FROM hud_pr_latest WHERE repo = ? AND job_class = 'pr' AND "
          "last_ms >= ? ORDER BY last_ms DESC, pr_number DESC LIMIT ? OFFSET ?",
          {repo, since_ms, sql_limit(limit), sql_offset(offset)}, read_i64);
    });
  }

  std::vector<JobRecord> repo_jobs_for_prs(const std::string& repo, const std::vector<int64_t>& prs,
                                           int64_t since_ms) override {
    if (prs.empty()) return {};
    std::vector<SqlParam> params{repo};
    params.insert(params.end(), prs.begin(), prs.end());
    params.push_back(since_ms);
    return db_->read("repo_jobs_for_prs", [&](SqlTx& tx) {
      std::vector<JobRecord> out;
      tx.each(fmt::format("SELECT {} FROM jobs WHERE repo = ? AND pr_number IN ({}) AND "
                          "created_ms >= ? ORDER BY "
                          "pr_number DESC, workflow_name COLLATE \"C\", job_name COLLATE \"C\", "
                          "run_attempt",
                          kJobColumns, placeholder_list(static_cast<int>(prs.size()))),
              params, [&](const SqlRow& r) { out.push_back(read_job(r)); });
      return out;
    });
  }

  std::vector<JobRecord> recent_jobs(const std::string& repo, int64_t since_ms, JobFilter f,
                                     int limit, int offset, int64_t* total) override {
    return db_->read("recent_jobs", [&](SqlTx& tx) {
      if (total) {
        auto stats = stats_since(tx, since_ms, f, repo);
        *total = stats.empty() ? 0 : stats[0].jobs;
      }
      // One indexed range per event type (jobs_repo_event), so the page never walks the
      // repo's other jobs.
      std::string branches;
      std::vector<SqlParam> params;
      for (const std::string& e : event_types(f)) {
        branches += fmt::format(
            "{}SELECT {} FROM jobs WHERE repo = ? AND event_type = ? AND "
            "created_ms >= ? AND superseded = 0",
            branches.empty() ? "" : " UNION ALL ", kJobColumns);
        params.insert(params.end(), {repo, e, since_ms});
      }
      params.insert(params.end(), {sql_limit(limit), sql_offset(offset)});
      std::vector<JobRecord> out;
      tx.each(fmt::format("SELECT * FROM ({}) u ORDER BY created_ms DESC, key COLLATE \"C\" "
                          "LIMIT ? OFFSET ?",
                          branches),
              params, [&](const SqlRow& r) { out.push_back(read_job(r)); });
      return out;
    });
  }

  std::vector<E2eBucket> e2e_histogram(const std::string& repo, int64_t since_ms) override {
    int64_t day = first_whole_day(since_ms);
    return db_->read("e2e_histogram", [&](SqlTx& tx) {
      std::map<int64_t, int64_t> jobs;
      auto add = [&](const SqlRow& r) { jobs[r.i64(0)] += r.i64(1); };
      tx.each(
          "SELECT tenth_min, SUM(jobs) FROM hud_e2e_daily WHERE repo = ? AND day >= ? "
          "GROUP BY tenth_min",
          {repo, day}, add);
      tx.each(fmt::format("SELECT {}, COUNT(*) FROM jobs WHERE repo = ? AND created_ms >= ? AND "
                          "created_ms < ? AND queue_time_ms >= 0 AND execution_time_ms >= 0 "
                          "GROUP BY 1",
                          e2e_bucket_sql()),
              {repo, since_ms, day * kRollupDayMs}, add);
      std::vector<E2eBucket> out;
      for (auto [bucket, n] : jobs)
        if (n > 0) out.push_back({bucket, n});
      return out;
    });
  }

  int64_t prune_jobs(int64_t before_ms, int limit) override {
    return db_->write("prune_jobs", [&](SqlTx& tx) {
      int64_t n = tx.exec(
          "DELETE FROM jobs WHERE key IN (SELECT key FROM jobs WHERE created_ms < ? AND "
          "status = 'completed' LIMIT ?)",
          {before_ms, sql_limit(limit)});
      // A PR whose newest job is gone has no job left to show; its count stays in the rollups.
      // Once per pass, with its last batch: the table has no index that leads with last_ms.
      if (n < limit) tx.exec("DELETE FROM hud_pr_latest WHERE last_ms < ?", {before_ms});
      // Detail begins at the latest cut that deleted anything.
      if (n > 0)
        tx.exec(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
            "value = excluded.value WHERE CAST(excluded.value AS BIGINT) > "
            "CAST(meta.value AS BIGINT)",
            {kDetailSinceKey, std::to_string(before_ms)});
      return n;
    });
  }

  int64_t detail_since() override {
    auto v = get_meta(kDetailSinceKey);
    return v ? std::stoll(*v) : 0;
  }

  std::vector<JobRecord> jobs_for_pr(int64_t pr_number) override {
    return read_all("jobs_for_pr",
                    fmt::format("SELECT {} FROM jobs WHERE pr_number = ? ORDER BY repo COLLATE "
                                "\"C\", workflow_name COLLATE \"C\", job_name COLLATE \"C\", "
                                "run_attempt",
                                kJobColumns),
                    {pr_number}, read_job);
  }

  std::vector<TaskItem> tasks_of_kind(const std::string& kind) {
    return read_all("tasks_of_kind",
                    fmt::format("SELECT {} FROM tasks WHERE kind = ? ORDER BY id", kTaskColumns),
                    {kind}, read_task);
  }

  void insert_jobs_bulk(const std::vector<JobRecord>& all) {
    // Nightly attempts one by one, as insert_job writes them, so they supersede each other.
    std::vector<JobRecord> jobs, attempts;
    for (const JobRecord& j : all)
      (std::string(job_class(j.event_type)) == job_class(JobFilter::kNightly) ? attempts : jobs)
          .push_back(j);
    // Many rows per INSERT: one statement per row costs a round trip each in PostgreSQL. Within
    // a statement, as across statements, the first row of a key wins (DO NOTHING skips a row
    // that conflicts with one the same statement inserted).
    db_->write("insert_jobs_bulk", [&](SqlTx& tx) {
      std::set<std::string> inserted;
      std::vector<SqlParam> params;
      for (size_t begin = 0; begin < jobs.size(); begin += kBulkRows) {
        size_t end = std::min(jobs.size(), begin + kBulkRows);
        params.clear();
        std::string values;
        for (size_t i = begin; i < end; ++i) {
          add_job(params, jobs[i]);
          values += (i > begin ? ",(" : "(") + placeholder_list(kJobColumnCount) + ")";
        }
        tx.each(fmt::format("INSERT INTO jobs ({}) VALUES {} ON CONFLICT DO NOTHING RETURNING key",
                            kJobColumns, values),
                params, [&](const SqlRow& r) { inserted.insert(r.text(0)); });
      }
      // The first row of each inserted key is the one stored.
      RollupDeltas deltas;
      std::vector<const JobRecord*> added;
      for (const JobRecord& j : jobs)
        if (inserted.erase(j.key)) {
          deltas.add_job(j, +1);
          added.push_back(&j);
        }
      track_prs(tx, added, deltas);
      for (const JobRecord& j : attempts) insert_one(tx, j, deltas);
      write_rollups(tx, deltas);
    });
  }

  void record_level(const std::string& repo, const std::string& level, int64_t now_ms) override {
    db_->write("record_level", [&](SqlTx& tx) {
      // Another replica must not append between the read and the insert.
      tx.lock(kLevelLockKey);
      auto last =
          tx.first("SELECT level FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1",
                   {repo}, [](const SqlRow& r) { return r.text(0); });
      if (last == level) return;
      tx.exec(
          "INSERT INTO level_history (repo, level, since_ms) VALUES (?,?,?) "
          "ON CONFLICT DO NOTHING",
          {repo, level, now_ms});
    });
  }

  std::map<std::string, int64_t> last_job_ms(JobFilter f) override {
    return db_->read("last_job_ms", [&](SqlTx& tx) {
      std::map<std::string, int64_t> out;
      tx.each(
          "SELECT repo, MAX(last_ms) FROM hud_hourly WHERE job_class = ? AND jobs > 0 "
          "GROUP BY repo",
          {job_class(f)}, [&](const SqlRow& r) { out[r.text(0)] = r.i64(1); });
      return out;
    });
  }

  std::optional<int64_t> first_at_level(const std::string& repo,
                                        const std::string& level) override {
    auto first = read_first("first_at_level",
                            "SELECT MIN(since_ms), COUNT(*) FROM level_history WHERE repo = ? AND "
                            "level = ?",
                            {repo, level}, [](const SqlRow& r) {
                              return std::pair{r.i64(0), r.i64(1)};
                            });
    if (!first || first->second == 0) return std::nullopt;
    return first->first;
  }

  std::vector<Demotion> demotions() override {
    return read_all(
        "demotions",
        "SELECT repo, since_ms, pr_number, pr_url FROM demotions ORDER BY repo COLLATE \"C\"", {},
        read_demotion);
  }

  std::optional<Demotion> demotion(const std::string& repo) override {
    return read_first("demotion",
                      "SELECT repo, since_ms, pr_number, pr_url FROM demotions WHERE repo = ?",
                      {repo}, read_demotion);
  }

  void set_demotion(const Demotion& d) override {
    // The first since_ms stays: a job's check run is suppressed from when the PR was first seen.
    write("set_demotion",
          "INSERT INTO demotions (repo, since_ms, pr_number, pr_url) VALUES (?,?,?,?) "
          "ON CONFLICT (repo) DO UPDATE SET pr_number = excluded.pr_number, "
          "pr_url = excluded.pr_url",
          {d.repo, d.since_ms, d.pr_number, d.pr_url});
  }

  void clear_demotion(const std::string& repo) override {
    write("clear_demotion", "DELETE FROM demotions WHERE repo = ?", {repo});
  }

  bool run_due(const std::string& name, int64_t now_ms, int64_t interval_ms) override {
    return write_changed(
        "run_due",
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = excluded.value WHERE CAST(meta.value AS BIGINT) <= ?",
        {"run_due:" + name, std::to_string(now_ms), now_ms - interval_ms});
  }

  bool claim_redelivery(const std::string& guid, int64_t now_ms, int64_t min_gap_ms,
                        int max_attempts) override {
    return write_changed(
        "claim_redelivery",
        "INSERT INTO redeliveries (guid, requested_ms, attempts) VALUES (?, ?, 1) "
        "ON CONFLICT (guid) DO UPDATE SET requested_ms = excluded.requested_ms, "
        "attempts = redeliveries.attempts + 1 WHERE redeliveries.requested_ms <= ? AND "
        "redeliveries.attempts < ?",
        {guid, now_ms, now_ms - min_gap_ms, max_attempts});
  }

  std::optional<int64_t> level_since(const std::string& repo, const std::string& level) override {
    auto last = read_first(
        "level_since",
        "SELECT level, since_ms FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1",
        {repo}, [](const SqlRow& r) {
          return std::pair{r.text(0), r.i64(1)};
        });
    if (!last || last->first != level) return std::nullopt;
    return last->second;
  }

 private:
  // Inserts one job with its rollup deltas and PR tracking; false (writing nothing) if the key
  // exists. A nightly or periodic attempt supersedes the earlier attempts of its run and job, or
  // is itself superseded when a later one is stored already.
  bool insert_one(SqlTx& tx, const JobRecord& job, RollupDeltas& deltas) {
    JobRecord j = job;
    std::vector<JobRecord> earlier;
    if (std::string(job_class(j.event_type)) == job_class(JobFilter::kNightly)) {
      tx.lock(kAttemptLockKey | stable_hash24(j.repo + "\n" + j.run_id + "\n" + j.job_name));
      auto others = tx.all(
          fmt::format("SELECT {}, key, run_attempt FROM jobs WHERE repo = ? AND run_id = ? AND "
                      "job_name = ? AND event_type IN {} AND superseded = 0 AND key <> ?{}",
                      kRollupColumns, event_types_sql(JobFilter::kNightly), for_update(d_)),
          {j.repo, j.run_id, j.job_name, j.key}, [](const SqlRow& r) {
            JobRecord o = read_rollup_columns(r);
            o.key = r.text(kRollupColumnCount);
            o.run_attempt = r.i64(kRollupColumnCount + 1);
            return o;
          });
      j.superseded = std::any_of(others.begin(), others.end(),
                                 [&](const JobRecord& o) { return o.run_attempt > j.run_attempt; });
      if (!j.superseded) earlier = std::move(others);
    }
    std::vector<SqlParam> params;
    add_job(params, j);
    if (tx.exec(fmt::format("INSERT INTO jobs ({}) VALUES ({}) ON CONFLICT DO NOTHING", kJobColumns,
                            placeholder_list(kJobColumnCount)),
                params) == 0)
      return false;
    for (const JobRecord& o : earlier) {
      tx.exec("UPDATE jobs SET superseded = 1 WHERE key = ?", {o.key});
      deltas.supersede(o);
    }
    deltas.add_job(j, +1);
    track_prs(tx, {&j}, deltas);
    return true;
  }

  // A window's figures per repo: the hourly rollups from its first whole hour, the job rows before
  // that, and the PRs whose newest job is before that.
  std::vector<RepoStats> stats_since(SqlTx& tx, int64_t since_ms, JobFilter f,
                                     const std::string& repo) {
    int64_t hour = first_whole_hour(since_ms);
    int64_t edge_end = hour * kRollupHourMs;
    std::string one_repo = repo.empty() ? "" : "AND repo = ?";
    std::map<std::string, RepoStats> by_repo;
    auto add = [&](const SqlRow& r) {
      RepoStats piece = read_repo_stats(r);
      merge_stats(by_repo[piece.repo], piece);
    };
    auto with_repo = [&](std::vector<SqlParam> params) {
      if (!repo.empty()) params.push_back(repo);
      return params;
    };
    tx.each(fmt::format(kRollupStatsSql, one_repo), with_repo({job_class(f), hour}), add);
    if (since_ms < edge_end) {
      tx.each(fmt::format(kRepoStatsSql, event_types_sql(f), one_repo),
              with_repo({since_ms, edge_end}), add);
      tx.each(fmt::format(kEdgePrsSql, one_repo), with_repo({job_class(f), since_ms, edge_end}),
              [&](const SqlRow& r) {
                if (auto it = by_repo.find(r.text(0)); it != by_repo.end())
                  it->second.prs += r.i64(1);
              });
    }
    std::vector<RepoStats> out;
    for (auto& [name, stats] : by_repo) out.push_back(stats);
    return out;
  }

  // Moves each written PR's newest job forward, in hud_pr_latest and in the hourly PR counts.
  // PRs are taken in key order, each row locked (PostgreSQL) before it is read, so concurrent
  // writers of one PR wait for each other and never deadlock.
  void track_prs(SqlTx& tx, const std::vector<const JobRecord*>& jobs, RollupDeltas& deltas) {
    std::map<std::tuple<std::string, std::string, int64_t>, int64_t> newest;
    for (const JobRecord* j : jobs)
      if (j->pr_number > 0) {
        auto [it, fresh] =
            newest.try_emplace({j->repo, job_class(j->event_type), j->pr_number}, j->created_ms);
        if (!fresh) it->second = std::max(it->second, j->created_ms);
      }
    for (const auto& [key, created] : newest) {
      const auto& [repo, cls, pr] = key;
      tx.exec(
          "INSERT INTO hud_pr_latest (repo, job_class, pr_number, last_ms) VALUES (?,?,?,-1) "
          "ON CONFLICT DO NOTHING",
          {repo, cls, pr});
      int64_t last = tx.first(fmt::format("SELECT last_ms FROM hud_pr_latest WHERE repo = ? AND "
                                          "job_class = ? AND pr_number = ?{}",
                                          for_update(d_)),
                              {repo, cls, pr}, read_i64)
                         .value_or(-1);
      if (created <= last) continue;
      tx.exec(
          "UPDATE hud_pr_latest SET last_ms = ? WHERE repo = ? AND job_class = ? AND "
          "pr_number = ?",
          {created, repo, cls, pr});
      deltas.move_pr(repo, cls, last, created);
    }
  }

  // Adds the deltas to the rollup rows, in key order (so concurrent writers never deadlock).
  void write_rollups(SqlTx& tx, const RollupDeltas& deltas) {
    for (const auto& [key, h] : deltas.hours) {
      if (h.is_empty()) continue;
      const auto& [cls, hour, repo] = key;
      tx.exec(hour_upsert_sql_, {cls,           hour,          repo,           h.level,
                                 h.jobs,        h.success,     h.failure,      h.timed_out,
                                 h.cancelled,   h.in_progress, h.queue_sum_ms, h.queue_n,
                                 h.exec_sum_ms, h.exec_n,      h.overruns,     h.prs_last,
                                 h.first_ms,    h.last_ms,     h.exec_max_ms,  h.failure_upstream});
    }
    // An hour a superseded attempt left: its level, first and last job and longest execution are
    // taken again from the job rows still counted there.
    for (const auto& [cls, hour, repo] : deltas.recount) {
      std::string rows = fmt::format(
          "FROM jobs WHERE repo = ? AND created_ms >= ? AND created_ms < ? AND event_type IN {} "
          "AND superseded = 0",
          event_types_sql(cls == job_class(JobFilter::kNightly) ? JobFilter::kNightly
                                                                : JobFilter::kPullRequest));
      int64_t from = hour * kRollupHourMs, to = from + kRollupHourMs;
      tx.exec(fmt::format("UPDATE hud_hourly SET level = COALESCE((SELECT MAX(level COLLATE "
                          "\"C\") {0}), level), first_ms = COALESCE((SELECT MIN(created_ms) {0}), "
                          "first_ms), last_ms = COALESCE((SELECT MAX(created_ms) {0}), last_ms), "
                          "exec_max_ms = COALESCE((SELECT MAX(CASE WHEN execution_time_ms >= 0 "
                          "THEN execution_time_ms ELSE -1 END) {0}), -1) WHERE job_class = ? AND "
                          "hour = ? AND repo = ?",
                          rows),
              {repo, from, to, repo, from, to, repo, from, to, repo, from, to, cls, hour, repo});
    }
    for (const auto& [key, n] : deltas.e2e) {
      if (n == 0) continue;
      const auto& [repo, day, bucket] = key;
      tx.exec(
          "INSERT INTO hud_e2e_daily (repo, day, tenth_min, jobs) VALUES (?,?,?,?) "
          "ON CONFLICT (repo, day, tenth_min) DO UPDATE SET jobs = hud_e2e_daily.jobs + "
          "excluded.jobs",
          {repo, day, bucket, n});
      // A job whose time changed left its old bucket; an empty bucket is no row, as the
      // back-fill makes them.
      if (n < 0)
        tx.exec(
            "DELETE FROM hud_e2e_daily WHERE repo = ? AND day = ? AND tenth_min = ? AND jobs = 0",
            {repo, day, bucket});
    }
  }

  // Inserts pending tasks in tx. In PostgreSQL under the task lock, held until commit, so task
  // ids become visible in id order: otherwise a later id of a key could commit first, be
  // claimed, and then an earlier id of that key (committing late) would look like the oldest
  // pending task and be claimed while the later one still runs.
  void insert_tasks(SqlTx& tx, const std::vector<TaskItem>& tasks) {
    if (tasks.empty()) return;
    tx.lock(kTaskLockKey);
    for (const TaskItem& t : tasks)
      tx.exec(
          "INSERT INTO tasks (kind, ordering_key, payload, status, created_ms, next_attempt_ms) "
          "VALUES (?,?,?,'pending',?,?)",
          {t.kind, t.ordering_key, t.payload, t.created_ms, t.next_attempt_ms});
  }

  std::unique_ptr<SqlDb> db_;
  SqlDialect d_;
  std::string hour_upsert_sql_;
};

}  // namespace

namespace {
SqlStore& sql_store(Store& store) {
  auto* sql = dynamic_cast<SqlStore*>(&store);
  if (!sql) throw Error("store tools: not a store open_store opened");
  return *sql;
}
}  // namespace

void insert_jobs_bulk(Store& store, const std::vector<JobRecord>& jobs) {
  sql_store(store).insert_jobs_bulk(jobs);
}

std::vector<TaskItem> tasks_of_kind(Store& store, const std::string& kind) {
  return sql_store(store).tasks_of_kind(kind);
}

std::unique_ptr<Store> open_store(const std::string& uri) {
  if (uri.rfind("sqlite:", 0) == 0)
    return std::make_unique<SqlStore>(open_sqlite_db(uri.substr(7), kTransactionWaitMs));
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0)
    return std::make_unique<SqlStore>(open_postgres_db(uri, kPostgresPoolSize, kTransactionWaitMs));
  throw Error("store: expected sqlite:PATH or a postgresql:// URI, got '" + uri + "'");
}

}  // namespace ootci
