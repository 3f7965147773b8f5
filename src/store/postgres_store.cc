#include <fmt/format.h>

#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <regex>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "store/migrations.h"
#include "store/store.h"

namespace ootci {
namespace {

// Enough for the dispatcher threads and a few concurrent HTTP handlers; more would only hold
// server slots that sit idle.
constexpr size_t kPoolSize = 4;

// Arbitrary but fixed: every replica must take the same lock before migrating.
constexpr int64_t kMigrationLockKey = 0x6f6f746369;  // "ootci"

constexpr const char* kOutboxColumns =
    "id, delivery_id, repo, event_type, callback_token, status, attempts, created_ms, "
    "next_attempt_ms, deadline_ms, delivered_ms, last_error";

OutboxStatus parse_status(const std::string& s) {
  if (s == "delivered") return OutboxStatus::kDelivered;
  if (s == "failed") return OutboxStatus::kFailed;
  return OutboxStatus::kPending;
}

OutboxItem read_outbox(const pqxx::row& r) {
  OutboxItem o;
  o.id = r[0].as<int64_t>();
  o.delivery_id = r[1].as<std::string>();
  o.repo = r[2].as<std::string>();
  o.event_type = r[3].as<std::string>();
  o.callback_token = r[4].as<std::string>();
  o.status = parse_status(r[5].as<std::string>());
  o.attempts = r[6].as<int>();
  o.created_ms = r[7].as<int64_t>();
  o.next_attempt_ms = r[8].as<int64_t>();
  o.deadline_ms = r[9].as<int64_t>();
  o.delivered_ms = r[10].as<int64_t>();
  o.last_error = r[11].as<std::string>();
  return o;
}

std::vector<OutboxItem> read_outbox(const pqxx::result& res) {
  std::vector<OutboxItem> out;
  for (const auto& r : res) out.push_back(read_outbox(r));
  return out;
}

constexpr const char* kJobColumns =
    "key, delivery_id, repo, run_id, run_attempt, job_name, workflow_name, event_type, head_sha, "
    "pr_number, level, status, conclusion, dispatched_ms, in_progress_ms, completed_ms, "
    "queue_time_ms, execution_time_ms, in_progress_hash, completed_hash, tests_passed, "
    "tests_failed, tests_skipped, tests_total, workflow_url, check_run_id, artifact_url, "
    "check_run_created, last_body, failed_tests_json, triage_json, created_ms";
constexpr int kJobColumnCount = 32;

constexpr const char* kTaskColumns =
    "id, kind, ordering_key, payload, attempts, created_ms, next_attempt_ms, status, last_error";

// Serializes task claims, and task inserts against claims (see insert_tasks and claim_tasks).
// Distinct from kMigrationLockKey.
constexpr int64_t kTaskLockKey = 0x6f6f74636974;  // "ootcit"

// "$first,$first+1,...": n positional parameters.
std::string placeholders(int n, int first = 1) {
  std::string out;
  for (int i = 0; i < n; ++i) out += fmt::format("{}${}", i ? "," : "", first + i);
  return out;
}

// The job's columns in kJobColumns order, by reference; `check_run_created` stands in for the
// bool, because the column is an INTEGER and a bool would be sent as "true".
auto job_values(const JobRecord& j, const int& check_run_created) {
  return std::forward_as_tuple(
      j.key, j.delivery_id, j.repo, j.run_id, j.run_attempt, j.job_name, j.workflow_name,
      j.event_type, j.head_sha, j.pr_number, j.level, j.status, j.conclusion, j.dispatched_ms,
      j.in_progress_ms, j.completed_ms, j.queue_time_ms, j.execution_time_ms, j.in_progress_hash,
      j.completed_hash, j.tests_passed, j.tests_failed, j.tests_skipped, j.tests_total,
      j.workflow_url, j.check_run_id, j.artifact_url, check_run_created, j.last_body,
      j.failed_tests_json, j.triage_json, j.created_ms);
}
static_assert(std::tuple_size_v<decltype(job_values(std::declval<JobRecord>(), 0))> ==
              kJobColumnCount);

// Runs an exec_params whose first kJobColumnCount parameters are the job's columns in
// kJobColumns order, followed by `extra`.
template <typename... Extra>
pqxx::result exec_job(pqxx::work& w, const std::string& sql, const JobRecord& j,
                      const Extra&... extra) {
  int check_run_created = j.check_run_created ? 1 : 0;
  return std::apply([&](const auto&... v) { return w.exec_params(sql, v..., extra...); },
                    job_values(j, check_run_created));
}

JobRecord read_job(const pqxx::row& r) {
  JobRecord j;
  int i = 0;
  auto text = [&] { return r[i++].as<std::string>(); };
  auto i64 = [&] { return r[i++].as<int64_t>(); };
  j.key = text();
  j.delivery_id = text();
  j.repo = text();
  j.run_id = text();
  j.run_attempt = i64();
  j.job_name = text();
  j.workflow_name = text();
  j.event_type = text();
  j.head_sha = text();
  j.pr_number = i64();
  j.level = text();
  j.status = text();
  j.conclusion = text();
  j.dispatched_ms = i64();
  j.in_progress_ms = i64();
  j.completed_ms = i64();
  j.queue_time_ms = i64();
  j.execution_time_ms = i64();
  j.in_progress_hash = text();
  j.completed_hash = text();
  j.tests_passed = i64();
  j.tests_failed = i64();
  j.tests_skipped = i64();
  j.tests_total = i64();
  j.workflow_url = text();
  j.check_run_id = text();
  j.artifact_url = text();
  j.check_run_created = i64() != 0;
  j.last_body = text();
  j.failed_tests_json = text();
  j.triage_json = text();
  j.created_ms = i64();
  return j;
}

std::vector<JobRecord> read_jobs(const pqxx::result& res) {
  std::vector<JobRecord> out;
  for (const auto& r : res) out.push_back(read_job(r));
  return out;
}

TaskItem read_task(const pqxx::row& r) {
  TaskItem t;
  t.id = r[0].as<int64_t>();
  t.kind = r[1].as<std::string>();
  t.ordering_key = r[2].as<std::string>();
  t.payload = r[3].as<std::string>();
  t.attempts = r[4].as<int>();
  t.created_ms = r[5].as<int64_t>();
  t.next_attempt_ms = r[6].as<int64_t>();
  t.status = r[7].as<std::string>();
  t.last_error = r[8].as<std::string>();
  return t;
}

std::vector<TaskItem> read_tasks(const pqxx::result& res) {
  std::vector<TaskItem> out;
  for (const auto& r : res) out.push_back(read_task(r));
  return out;
}

// The event types a JobFilter selects, as an SQL list.
const char* event_types(JobFilter f) {
  return f == JobFilter::kNightly ? "('nightly','periodic')" : "('pull_request','push')";
}

// SQLite reads a negative LIMIT as "no limit" and a negative OFFSET as 0; PostgreSQL rejects
// both, so translate.
int64_t sql_limit(int limit) {
  return limit < 0 ? std::numeric_limits<int64_t>::max() : limit;
}
int64_t sql_offset(int offset) {
  return offset < 0 ? 0 : offset;
}

// An aggregate as int64; NULL (a SUM or MIN over no rows) reads as 0.
int64_t i64_or_0(const pqxx::field& f) {
  return f.is_null() ? 0 : f.as<int64_t>();
}

// The HUD aggregates, as in sqlite_store.cc. SUM over BIGINT is NUMERIC in PostgreSQL, hence the
// casts. Text is compared and sorted with the C collation so MAX(level) and the ORDER BYs agree
// with SQLite's byte order whatever the database's default collation is. {} is the event-type
// list.
constexpr const char* kRepoStatsSql =
    "SELECT repo, MAX(level COLLATE \"C\"), COUNT(*), "
    "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN conclusion = 'cancelled' THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN status = 'in_progress' THEN 1 ELSE 0 END)::BIGINT, "
    "COUNT(DISTINCT CASE WHEN pr_number > 0 THEN pr_number END), "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN queue_time_ms ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN execution_time_ms > 10800000 THEN 1 ELSE 0 END)::BIGINT, "
    "MIN(created_ms), MAX(created_ms) "
    "FROM jobs WHERE created_ms >= $1 AND created_ms < $2 AND event_type IN {} {} "
    "GROUP BY repo ORDER BY repo COLLATE \"C\"";

// created_ms is BIGINT, so / is integer division, as in SQLite.
constexpr const char* kDailyStatsSql =
    "SELECT repo, created_ms / 86400000 AS day, COUNT(*), "
    "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END)::BIGINT, "
    "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END)::BIGINT "
    "FROM jobs WHERE created_ms >= $1 AND created_ms < $2 AND event_type IN {} "
    "GROUP BY repo, created_ms / 86400000 ORDER BY repo COLLATE \"C\", day";

// Serializes record_level's read-then-append per repo, across replicas. A two-key advisory lock
// (class, hashtext(repo)): that key space is separate from the one-key locks above.
constexpr int kLevelLockClass = 0x6f6f74;  // "oot"

// The URI for error messages: the password, in the userinfo or as a parameter, never leaves.
std::string redact(const std::string& uri) {
  static const std::regex userinfo_password(R"(^([a-z]+://[^:@/?]*):[^@/?]*@)");
  static const std::regex param_password(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(uri, userinfo_password, "$1:***@");
  return std::regex_replace(out, param_password, "$1***");
}

// libpq messages end in a newline and sometimes span lines; an Error message is one line.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class PostgresStore : public Store {
 public:
  explicit PostgresStore(std::string uri) : uri_(std::move(uri)) { migrate(); }

  int schema_version() override {
    return run("schema_version", [](pqxx::work& w) {
      auto r = w.exec("SELECT version FROM schema_version");
      return r.empty() ? 0 : r[0][0].as<int>();
    });
  }

  bool accept_delivery(const DeliveryRecord& d, const std::vector<OutboxItem>& outbox) override {
    return run("accept_delivery", [&](pqxx::work& w) {
      auto ins = w.exec_params(
          "INSERT INTO deliveries (delivery_id, event, action, head_sha, pr_number, received_ms, "
          "body) VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING",
          d.delivery_id, d.event, d.action, d.head_sha, d.pr_number, d.received_ms, d.body);
      if (ins.affected_rows() == 0) return false;  // not committed: the transaction rolls back
      for (const OutboxItem& o : outbox)
        w.exec_params(
            "INSERT INTO outbox (delivery_id, repo, event_type, callback_token, status, "
            "created_ms, next_attempt_ms, deadline_ms) VALUES ($1,$2,$3,$4,'pending',$5,$6,$7)",
            d.delivery_id, o.repo, o.event_type, o.callback_token, o.created_ms, o.next_attempt_ms,
            o.deadline_ms);
      w.commit();
      return true;
    });
  }

  std::optional<DeliveryRecord> get_delivery(const std::string& id, bool with_body) override {
    return run("get_delivery", [&](pqxx::work& w) -> std::optional<DeliveryRecord> {
      auto r = w.exec_params(
          fmt::format("SELECT delivery_id, event, action, head_sha, pr_number, received_ms, {} "
                      "FROM deliveries WHERE delivery_id = $1",
                      with_body ? "body" : "''"),
          id);
      if (r.empty()) return std::nullopt;
      const auto& row = r[0];
      return DeliveryRecord{row[0].as<std::string>(), row[1].as<std::string>(),
                            row[2].as<std::string>(), row[3].as<std::string>(),
                            row[4].as<int64_t>(),     row[5].as<int64_t>(),
                            row[6].as<std::string>()};
    });
  }

  std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) override {
    // SKIP LOCKED lets replicas claim concurrently without waiting on, or double-claiming, each
    // other's rows. RETURNING has no order, so sort by id like SQLite returns them.
    return run("claim_due", [&](pqxx::work& w) {
      auto r = w.exec_params(
          fmt::format("WITH claimed AS (UPDATE outbox SET leased = 1, next_attempt_ms = $1 "
                      "WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND "
                      "next_attempt_ms <= $2 ORDER BY next_attempt_ms, id LIMIT $3 "
                      "FOR UPDATE SKIP LOCKED) RETURNING {0}) "
                      "SELECT {0} FROM claimed ORDER BY id",
                      kOutboxColumns),
          now_ms + lease_ms, now_ms, limit);
      w.commit();
      return read_outbox(r);
    });
  }

  void mark_delivered(int64_t id, int attempts, int64_t now_ms) override {
    run("mark_delivered", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE outbox SET status = 'delivered', leased = 0, attempts = $1, delivered_ms = $2, "
          "last_error = '' WHERE id = $3",
          attempts, now_ms, id);
      w.commit();
    });
  }

  void mark_retry(int64_t id, int attempts, int64_t next_ms, const std::string& error) override {
    run("mark_retry", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE outbox SET leased = 0, attempts = $1, next_attempt_ms = $2, last_error = $3 "
          "WHERE id = $4 AND status = 'pending'",
          attempts, next_ms, error, id);
      w.commit();
    });
  }

  void mark_failed(int64_t id, int attempts, const std::string& error) override {
    run("mark_failed", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE outbox SET status = 'failed', leased = 0, attempts = $1, last_error = $2 "
          "WHERE id = $3 AND status = 'pending'",
          attempts, error, id);
      w.commit();
    });
  }

  void release_leases(int64_t now_ms) override {
    run("release_leases", [&](pqxx::work& w) {
      w.exec_params("UPDATE outbox SET leased = 0, next_attempt_ms = $1 WHERE leased = 1", now_ms);
      w.commit();
    });
  }

  std::optional<int64_t> next_due_ms() override {
    return run("next_due_ms", [](pqxx::work& w) -> std::optional<int64_t> {
      auto r = w.exec("SELECT MIN(next_attempt_ms) FROM outbox WHERE status = 'pending'");
      if (r[0][0].is_null()) return std::nullopt;
      return r[0][0].as<int64_t>();
    });
  }

  std::vector<OutboxItem> outbox_for(const std::string& delivery_id) override {
    return run("outbox_for", [&](pqxx::work& w) {
      return read_outbox(w.exec_params(
          fmt::format("SELECT {} FROM outbox WHERE delivery_id = $1 ORDER BY repo COLLATE \"C\"",
                      kOutboxColumns),
          delivery_id));
    });
  }

  OutboxCounts outbox_counts() override {
    return run("outbox_counts", [](pqxx::work& w) {
      OutboxCounts c;
      for (const auto& row : w.exec("SELECT status, COUNT(*) FROM outbox GROUP BY status")) {
        OutboxStatus st = parse_status(row[0].as<std::string>());
        (st == OutboxStatus::kPending     ? c.pending
         : st == OutboxStatus::kDelivered ? c.delivered
                                          : c.failed) = row[1].as<int64_t>();
      }
      return c;
    });
  }

  void set_check_run_wanted(const std::string& sha, const std::string& repo,
                            int64_t now_ms) override {
    run("set_check_run_wanted", [&](pqxx::work& w) {
      w.exec_params(
          "INSERT INTO check_run_wanted (head_sha, repo, created_ms) VALUES ($1,$2,$3) "
          "ON CONFLICT DO NOTHING",
          sha, repo, now_ms);
      w.commit();
    });
  }

  bool check_run_wanted(const std::string& sha, const std::string& repo) override {
    return run("check_run_wanted", [&](pqxx::work& w) {
      return !w.exec_params("SELECT 1 FROM check_run_wanted WHERE head_sha = $1 AND repo = $2", sha,
                            repo)
                  .empty();
    });
  }

  std::optional<OutboxItem> dispatch_record(const std::string& delivery_id,
                                            const std::string& repo) override {
    return run("dispatch_record", [&](pqxx::work& w) -> std::optional<OutboxItem> {
      auto r = w.exec_params(
          fmt::format("SELECT {} FROM outbox WHERE delivery_id = $1 AND repo = $2", kOutboxColumns),
          delivery_id, repo);
      if (r.empty()) return std::nullopt;
      return read_outbox(r[0]);
    });
  }

  std::optional<JobRecord> get_job(const std::string& key) override {
    return run("get_job", [&](pqxx::work& w) -> std::optional<JobRecord> {
      auto r = w.exec_params(fmt::format("SELECT {} FROM jobs WHERE key = $1", kJobColumns), key);
      if (r.empty()) return std::nullopt;
      return read_job(r[0]);
    });
  }

  bool insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks) override {
    return run("insert_job", [&](pqxx::work& w) {
      auto r = exec_job(w,
                        fmt::format("INSERT INTO jobs ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                                    kJobColumns, placeholders(kJobColumnCount)),
                        job);
      if (r.affected_rows() == 0) return false;  // not committed: the transaction rolls back
      insert_tasks(w, tasks);
      w.commit();
      return true;
    });
  }

  bool update_job(const JobRecord& job, const std::string& expected_status,
                  const std::vector<TaskItem>& tasks,
                  std::optional<bool> expected_check_run_created) override {
    return run("update_job", [&](pqxx::work& w) {
      // Replace the whole row, but only if nobody moved it since it was read. The row lock the
      // UPDATE takes makes a concurrent update with the same expectation wait, then match 0 rows.
      auto r =
          exec_job(w,
                   fmt::format("UPDATE jobs SET ({}) = ({}) WHERE key = ${} AND status = ${} AND "
                               "(${} < 0 OR check_run_created = ${})",
                               kJobColumns, placeholders(kJobColumnCount), kJobColumnCount + 1,
                               kJobColumnCount + 2, kJobColumnCount + 3, kJobColumnCount + 3),
                   job, job.key, expected_status,
                   expected_check_run_created ? int64_t{*expected_check_run_created} : int64_t{-1});
      if (r.affected_rows() == 0) return false;  // not committed: the transaction rolls back
      insert_tasks(w, tasks);
      w.commit();
      return true;
    });
  }

  std::vector<JobRecord> jobs_for_sha(const std::string& head_sha) override {
    return run("jobs_for_sha", [&](pqxx::work& w) {
      return read_jobs(w.exec_params(
          fmt::format("SELECT {} FROM jobs WHERE head_sha = $1 ORDER BY key COLLATE \"C\"",
                      kJobColumns),
          head_sha));
    });
  }

  std::vector<JobRecord> overdue_jobs(int64_t before_ms, int limit) override {
    return run("overdue_jobs", [&](pqxx::work& w) {
      return read_jobs(w.exec_params(
          fmt::format("SELECT {} FROM jobs WHERE status = 'in_progress' AND in_progress_ms < $1 "
                      "ORDER BY in_progress_ms LIMIT $2",
                      kJobColumns),
          before_ms, limit));
    });
  }

  void enqueue_tasks(const std::vector<TaskItem>& tasks) override {
    run("enqueue_tasks", [&](pqxx::work& w) {
      insert_tasks(w, tasks);
      w.commit();
    });
  }

  std::vector<TaskItem> claim_tasks(int64_t now_ms, int limit, int64_t lease_ms) override {
    return run("claim_tasks", [&](pqxx::work& w) {
      // Claimers serialize on an xact advisory lock (cheap at this task volume) so the per-key
      // "oldest pending" check never races another claimer's snapshot; separate statement, so
      // the claim's READ COMMITTED snapshot is taken after the lock is held.
      w.exec_params("SELECT pg_advisory_xact_lock($1)", kTaskLockKey);
      // Only the oldest pending task of each ordering key is eligible; a leased one blocks its
      // key. SKIP LOCKED as in claim_due; RETURNING has no order, so sort by id.
      auto r = w.exec_params(
          fmt::format("WITH claimed AS (UPDATE tasks SET leased = 1, next_attempt_ms = $1 "
                      "WHERE id IN (SELECT t.id FROM tasks t WHERE t.status = 'pending' AND "
                      "t.next_attempt_ms <= $2 AND NOT EXISTS (SELECT 1 FROM tasks e WHERE "
                      "e.ordering_key = t.ordering_key AND e.status = 'pending' AND "
                      "e.id < t.id) ORDER BY t.id LIMIT $3 FOR UPDATE SKIP LOCKED) "
                      "RETURNING {0}) SELECT {0} FROM claimed ORDER BY id",
                      kTaskColumns),
          now_ms + lease_ms, now_ms, limit);
      w.commit();
      return read_tasks(r);
    });
  }

  void complete_task(int64_t id, int attempts) override {
    run("complete_task", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE tasks SET status = 'done', leased = 0, attempts = $1, last_error = '' "
          "WHERE id = $2",
          attempts, id);
      w.commit();
    });
  }

  void retry_task(int64_t id, int attempts, int64_t next_ms, const std::string& error) override {
    run("retry_task", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE tasks SET leased = 0, attempts = $1, next_attempt_ms = $2, last_error = $3 "
          "WHERE id = $4 AND status = 'pending'",
          attempts, next_ms, error, id);
      w.commit();
    });
  }

  void fail_task(int64_t id, int attempts, const std::string& error) override {
    run("fail_task", [&](pqxx::work& w) {
      w.exec_params(
          "UPDATE tasks SET status = 'failed', leased = 0, attempts = $1, last_error = $2 "
          "WHERE id = $3 AND status = 'pending'",
          attempts, error, id);
      w.commit();
    });
  }

  TaskCounts task_counts() override {
    return run("task_counts", [](pqxx::work& w) {
      TaskCounts c;
      for (const auto& row : w.exec("SELECT status, COUNT(*) FROM tasks GROUP BY status")) {
        std::string st = row[0].as<std::string>();
        (st == "pending" ? c.pending : st == "done" ? c.done : c.failed) = row[1].as<int64_t>();
      }
      return c;
    });
  }

  std::vector<TaskItem> tasks_of_kind(const std::string& kind) override {
    return run("tasks_of_kind", [&](pqxx::work& w) {
      return read_tasks(w.exec_params(
          fmt::format("SELECT {} FROM tasks WHERE kind = $1 ORDER BY id", kTaskColumns), kind));
    });
  }

  void set_meta(const std::string& key, const std::string& value) override {
    run("set_meta", [&](pqxx::work& w) {
      w.exec_params(
          "INSERT INTO meta (key, value) VALUES ($1, $2) "
          "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          key, value);
      w.commit();
    });
  }

  std::optional<std::string> get_meta(const std::string& key) override {
    return run("get_meta", [&](pqxx::work& w) -> std::optional<std::string> {
      auto r = w.exec_params("SELECT value FROM meta WHERE key = $1", key);
      if (r.empty()) return std::nullopt;
      return r[0][0].as<std::string>();
    });
  }

  std::vector<RepoStats> repo_stats(int64_t from_ms, int64_t to_ms, JobFilter f,
                                    const std::string& repo) override {
    return run("repo_stats", [&](pqxx::work& w) {
      std::vector<RepoStats> out;
      std::string sql =
          fmt::format(kRepoStatsSql, event_types(f), repo.empty() ? "" : "AND repo = $3");
      pqxx::result rows = repo.empty() ? w.exec_params(sql, from_ms, to_ms)
                                       : w.exec_params(sql, from_ms, to_ms, repo);
      for (const auto& row : rows) {
        RepoStats r;
        int i = 0;
        r.repo = row[i++].as<std::string>();
        r.level = row[i++].as<std::string>();
        for (int64_t* v : {&r.jobs, &r.success, &r.failure, &r.timed_out, &r.cancelled,
                           &r.in_progress, &r.prs, &r.queue_sum_ms, &r.queue_n, &r.exec_sum_ms,
                           &r.exec_n, &r.overruns, &r.first_ms, &r.last_ms})
          *v = i64_or_0(row[i++]);
        out.push_back(r);
      }
      return out;
    });
  }

  std::vector<DailyStats> daily_stats(int64_t from_ms, int64_t to_ms, JobFilter f) override {
    return run("daily_stats", [&](pqxx::work& w) {
      std::vector<DailyStats> out;
      for (const auto& row :
           w.exec_params(fmt::format(kDailyStatsSql, event_types(f)), from_ms, to_ms))
        out.push_back({row[0].as<std::string>(), i64_or_0(row[1]), i64_or_0(row[2]),
                       i64_or_0(row[3]), i64_or_0(row[4])});
      return out;
    });
  }

  std::vector<int64_t> repo_prs(const std::string& repo, int64_t from_ms, int64_t to_ms, int limit,
                                int offset, int64_t* total) override {
    return run("repo_prs", [&](pqxx::work& w) {
      // One transaction, but READ COMMITTED: the count and the page are separate snapshots, as
      // they are separate statements in SQLite.
      auto c = w.exec_params(
          "SELECT COUNT(DISTINCT pr_number) FROM jobs WHERE repo = $1 AND created_ms >= $2 "
          "AND created_ms < $3 AND pr_number > 0",
          repo, from_ms, to_ms);
      if (total) *total = i64_or_0(c[0][0]);
      std::vector<int64_t> out;
      for (const auto& row : w.exec_params(
               "SELECT pr_number FROM jobs WHERE repo = $1 AND created_ms >= $2 AND "
               "created_ms < $3 AND pr_number > 0 GROUP BY pr_number ORDER BY MAX(created_ms) "
               "DESC, pr_number DESC LIMIT $4 OFFSET $5",
               repo, from_ms, to_ms, sql_limit(limit), sql_offset(offset)))
        out.push_back(row[0].as<int64_t>());
      return out;
    });
  }

  std::vector<JobRecord> repo_jobs_for_prs(const std::string& repo,
                                           const std::vector<int64_t>& prs) override {
    if (prs.empty()) return {};
    // The numbers travel as one array literal, "{1,2,3}", rather than a parameter apiece.
    std::string array = "{";
    for (size_t i = 0; i < prs.size(); ++i) array += fmt::format("{}{}", i ? "," : "", prs[i]);
    array += "}";
    return run("repo_jobs_for_prs", [&](pqxx::work& w) {
      return read_jobs(w.exec_params(
          fmt::format("SELECT {} FROM jobs WHERE repo = $1 AND pr_number = ANY($2::BIGINT[]) "
                      "ORDER BY pr_number DESC, workflow_name COLLATE \"C\", "
                      "job_name COLLATE \"C\", run_attempt",
                      kJobColumns),
          repo, array));
    });
  }

  std::vector<JobRecord> recent_jobs(const std::string& repo, int64_t from_ms, int64_t to_ms,
                                     JobFilter f, int limit, int offset, int64_t* total) override {
    return run("recent_jobs", [&](pqxx::work& w) {
      std::string where = fmt::format(
          "WHERE repo = $1 AND created_ms >= $2 AND created_ms < $3 AND event_type IN {}",
          event_types(f));
      auto c = w.exec_params("SELECT COUNT(*) FROM jobs " + where, repo, from_ms, to_ms);
      if (total) *total = i64_or_0(c[0][0]);
      return read_jobs(w.exec_params(
          fmt::format("SELECT {} FROM jobs {} ORDER BY created_ms DESC, key COLLATE \"C\" "
                      "LIMIT $4 OFFSET $5",
                      kJobColumns, where),
          repo, from_ms, to_ms, sql_limit(limit), sql_offset(offset)));
    });
  }

  std::vector<int64_t> e2e_ms(const std::string& repo, int64_t from_ms, int64_t to_ms) override {
    return run("e2e_ms", [&](pqxx::work& w) {
      std::vector<int64_t> out;
      for (const auto& row :
           w.exec_params("SELECT queue_time_ms + execution_time_ms FROM jobs WHERE repo = $1 AND "
                         "created_ms >= $2 AND created_ms < $3 AND queue_time_ms >= 0 AND "
                         "execution_time_ms >= 0",
                         repo, from_ms, to_ms))
        out.push_back(row[0].as<int64_t>());
      return out;
    });
  }

  std::vector<JobRecord> jobs_for_pr(int64_t pr_number) override {
    return run("jobs_for_pr", [&](pqxx::work& w) {
      return read_jobs(w.exec_params(
          fmt::format("SELECT {} FROM jobs WHERE pr_number = $1 ORDER BY repo COLLATE \"C\", "
                      "workflow_name COLLATE \"C\", job_name COLLATE \"C\", run_attempt",
                      kJobColumns),
          pr_number));
    });
  }

  void insert_jobs_bulk(const std::vector<JobRecord>& jobs) override {
    if (jobs.empty()) return;
    // COPY into a temporary table, then one INSERT ... SELECT, since COPY cannot skip existing
    // keys. Rows go in batch order (`ord`), so within the batch the first row of a key wins, as
    // in SQLite's row-by-row inserts: DO NOTHING also skips a row that conflicts with one the
    // same statement inserted.
    run("insert_jobs_bulk", [&](pqxx::work& w) {
      w.exec("CREATE TEMPORARY TABLE jobs_bulk (LIKE jobs, ord BIGSERIAL) ON COMMIT DROP");
      std::vector<std::string> columns;
      for (std::string_view rest = kJobColumns; !rest.empty();) {
        size_t comma = rest.find(',');
        columns.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? "" : rest.substr(comma + 2);
      }
      pqxx::stream_to copy(w, "pg_temp.jobs_bulk", columns);
      for (const JobRecord& j : jobs) {
        int check_run_created = j.check_run_created ? 1 : 0;
        copy << job_values(j, check_run_created);
      }
      copy.complete();
      w.exec(
          fmt::format("INSERT INTO jobs ({0}) SELECT {0} FROM pg_temp.jobs_bulk ORDER BY ord "
                      "ON CONFLICT DO NOTHING",
                      kJobColumns));
      w.commit();
    });
  }

  void record_level(const std::string& repo, const std::string& level, int64_t now_ms) override {
    run("record_level", [&](pqxx::work& w) {
      // Another replica must not append between the read and the insert.
      w.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kLevelLockClass, repo);
      auto last = w.exec_params(
          "SELECT level FROM level_history WHERE repo = $1 ORDER BY since_ms DESC LIMIT 1", repo);
      if (!last.empty() && last[0][0].as<std::string>() == level) return;
      w.exec_params(
          "INSERT INTO level_history (repo, level, since_ms) VALUES ($1,$2,$3) "
          "ON CONFLICT DO NOTHING",
          repo, level, now_ms);
      w.commit();
    });
  }

  std::optional<int64_t> level_since(const std::string& repo, const std::string& level) override {
    return run("level_since", [&](pqxx::work& w) -> std::optional<int64_t> {
      auto r = w.exec_params(
          "SELECT level, since_ms FROM level_history WHERE repo = $1 ORDER BY since_ms DESC "
          "LIMIT 1",
          repo);
      if (r.empty() || r[0][0].as<std::string>() != level) return std::nullopt;
      return r[0][1].as<int64_t>();
    });
  }

 private:
  // Inserts pending tasks in w's transaction. Under the task lock, held until commit, so task ids
  // become visible in id order: otherwise a later id of a key could commit first, be claimed,
  // and then an earlier id of that key (committing late) would look like the oldest pending task
  // and be claimed while the later one still runs.
  void insert_tasks(pqxx::work& w, const std::vector<TaskItem>& tasks) {
    if (tasks.empty()) return;
    w.exec_params("SELECT pg_advisory_xact_lock($1)", kTaskLockKey);
    for (const TaskItem& t : tasks)
      w.exec_params(
          "INSERT INTO tasks (kind, ordering_key, payload, status, created_ms, next_attempt_ms) "
          "VALUES ($1,$2,$3,'pending',$4,$5)",
          t.kind, t.ordering_key, t.payload, t.created_ms, t.next_attempt_ms);
  }

  using Conn = std::unique_ptr<pqxx::connection>;

  // Takes an idle connection, or opens one while fewer than kPoolSize exist, or waits.
  Conn acquire() {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !idle_.empty() || open_ < kPoolSize; });
      if (!idle_.empty()) {
        Conn c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      ++open_;
    }
    // Connect outside the lock so a slow server does not block the other threads' connections.
    try {
      return std::make_unique<pqxx::connection>(uri_);
    } catch (const std::exception& e) {
      give_back(nullptr);
      throw Error(
          fmt::format("postgres: cannot connect to {}: {}", redact(uri_), one_line(e.what())));
    }
  }

  // Returns a connection to the pool; nullptr drops it, so the next acquire reconnects.
  void give_back(Conn c) {
    {
      std::lock_guard lock(mu_);
      if (c && c->is_open())
        idle_.push_back(std::move(c));
      else
        --open_;
    }
    cv_.notify_one();
  }

  // A pooled connection, returned to the pool when the operation ends. Resetting `conn` drops a
  // broken connection, so the next operation opens a fresh one.
  struct Lease {
    PostgresStore* store;
    Conn conn;
    ~Lease() { store->give_back(std::move(conn)); }
  };

  // Runs `fn` in a transaction on a pooled connection. `fn` commits; leaving without a commit
  // rolls back. Every libpqxx failure becomes an Error naming the operation.
  template <typename Fn>
  std::invoke_result_t<Fn&, pqxx::work&> run(const char* op, Fn&& fn) {
    Lease lease{this, acquire()};
    try {
      pqxx::work w(*lease.conn);
      return fn(w);
    } catch (const pqxx::broken_connection& e) {
      lease.conn.reset();
      throw Error(fmt::format("postgres: {}: connection lost: {}", op, one_line(e.what())));
    } catch (const pqxx::in_doubt_error& e) {
      lease.conn.reset();
      throw Error(fmt::format("postgres: {}: connection lost during commit, outcome unknown: {}",
                              op, one_line(e.what())));
    } catch (const pqxx::pqxx_exception& e) {
      throw Error(fmt::format("postgres: {}: {}", op, one_line(e.base().what())));
    }
  }

  void migrate() {
    const auto& steps = migrations(SqlDialect::kPostgres);
    run("migrate", [&](pqxx::work& w) {
      // Replicas starting at once would race to create the same tables; the lock serializes
      // them, and the later ones find the schema current. It is released with the transaction.
      w.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
      w.exec("CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL)");
      auto r = w.exec("SELECT version FROM schema_version");
      int current = r.empty() ? 0 : r[0][0].as<int>();
      int latest = static_cast<int>(steps.size());
      if (current > latest)
        throw Error(fmt::format(
            "postgres: database schema version {} is newer than this ootci ({})", current, latest));
      for (int i = current; i < latest; ++i) w.exec(steps[i]);
      w.exec("DELETE FROM schema_version");
      w.exec_params("INSERT INTO schema_version (version) VALUES ($1)", latest);
      w.commit();
    });
  }

  std::string uri_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Conn> idle_;
  size_t open_ = 0;  // connections that exist, idle or in use
};

}  // namespace

std::unique_ptr<Store> open_postgres_store(const std::string& uri) {
  return std::make_unique<PostgresStore>(uri);
}

}  // namespace ootci
