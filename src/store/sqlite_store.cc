#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "base/error.h"
#include "base/sqlite_db.h"
#include "store/migrations.h"
#include "store/store.h"

namespace ootci {
namespace {

OutboxStatus parse_status(const std::string& s) {
  if (s == "delivered") return OutboxStatus::kDelivered;
  if (s == "failed") return OutboxStatus::kFailed;
  return OutboxStatus::kPending;
}

using Stmt = SqliteStmt;
using StmtCache = SqliteStmtCache;

constexpr const char* kOutboxColumns =
    "id, delivery_id, repo, event_type, callback_token, status, attempts, created_ms, "
    "next_attempt_ms, deadline_ms, delivered_ms, last_error";

OutboxItem read_outbox(Stmt& s) {
  OutboxItem o;
  o.id = s.i64(0);
  o.delivery_id = s.text(1);
  o.repo = s.text(2);
  o.event_type = s.text(3);
  o.callback_token = s.text(4);
  o.status = parse_status(s.text(5));
  o.attempts = static_cast<int>(s.i64(6));
  o.created_ms = s.i64(7);
  o.next_attempt_ms = s.i64(8);
  o.deadline_ms = s.i64(9);
  o.delivered_ms = s.i64(10);
  o.last_error = s.text(11);
  return o;
}

constexpr const char* kJobColumns =
    "key, delivery_id, repo, run_id, run_attempt, job_name, workflow_name, event_type, head_sha, "
    "pr_number, level, status, conclusion, dispatched_ms, in_progress_ms, completed_ms, "
    "queue_time_ms, execution_time_ms, in_progress_hash, completed_hash, tests_passed, "
    "tests_failed, tests_skipped, tests_total, workflow_url, check_run_id, artifact_url, "
    "check_run_created, last_body, failed_tests_json, triage_json, created_ms";
constexpr int kJobColumnCount = 32;

void bind_job(Stmt& s, const JobRecord& j) {
  int i = 0;
  auto b = [&](const auto& v) { s.bind(++i, v); };
  b(j.key), b(j.delivery_id), b(j.repo), b(j.run_id), b(j.run_attempt), b(j.job_name);
  b(j.workflow_name), b(j.event_type), b(j.head_sha), b(j.pr_number), b(j.level), b(j.status);
  b(j.conclusion), b(j.dispatched_ms), b(j.in_progress_ms), b(j.completed_ms);
  b(j.queue_time_ms), b(j.execution_time_ms), b(j.in_progress_hash), b(j.completed_hash);
  b(j.tests_passed), b(j.tests_failed), b(j.tests_skipped), b(j.tests_total);
  b(j.workflow_url), b(j.check_run_id), b(j.artifact_url), b(int64_t{j.check_run_created});
  b(j.last_body), b(j.failed_tests_json), b(j.triage_json), b(j.created_ms);
}

JobRecord read_job(Stmt& s) {
  JobRecord j;
  int i = 0;
  j.key = s.text(i++);
  j.delivery_id = s.text(i++);
  j.repo = s.text(i++);
  j.run_id = s.text(i++);
  j.run_attempt = s.i64(i++);
  j.job_name = s.text(i++);
  j.workflow_name = s.text(i++);
  j.event_type = s.text(i++);
  j.head_sha = s.text(i++);
  j.pr_number = s.i64(i++);
  j.level = s.text(i++);
  j.status = s.text(i++);
  j.conclusion = s.text(i++);
  j.dispatched_ms = s.i64(i++);
  j.in_progress_ms = s.i64(i++);
  j.completed_ms = s.i64(i++);
  j.queue_time_ms = s.i64(i++);
  j.execution_time_ms = s.i64(i++);
  j.in_progress_hash = s.text(i++);
  j.completed_hash = s.text(i++);
  j.tests_passed = s.i64(i++);
  j.tests_failed = s.i64(i++);
  j.tests_skipped = s.i64(i++);
  j.tests_total = s.i64(i++);
  j.workflow_url = s.text(i++);
  j.check_run_id = s.text(i++);
  j.artifact_url = s.text(i++);
  j.check_run_created = s.i64(i++) != 0;
  j.last_body = s.text(i++);
  j.failed_tests_json = s.text(i++);
  j.triage_json = s.text(i++);
  j.created_ms = s.i64(i++);
  return j;
}

constexpr const char* kTaskColumns =
    "id, kind, ordering_key, payload, attempts, created_ms, next_attempt_ms, status, last_error";

TaskItem read_task(Stmt& s) {
  TaskItem t;
  t.id = s.i64(0);
  t.kind = s.text(1);
  t.ordering_key = s.text(2);
  t.payload = s.text(3);
  t.attempts = static_cast<int>(s.i64(4));
  t.created_ms = s.i64(5);
  t.next_attempt_ms = s.i64(6);
  t.status = s.text(7);
  t.last_error = s.text(8);
  return t;
}

const char* event_types(JobFilter f) {
  return f == JobFilter::kNightly ? "('nightly','periodic')" : "('pull_request','push')";
}

std::string placeholders(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i ? ",?" : "?";
  return out;
}

// Shared with PostgreSQL in spirit: plain SQL both dialects accept. {} is the event-type list.
constexpr const char* kRepoStatsSql =
    "SELECT repo, MAX(level), COUNT(*), "
    "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'cancelled' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN status = 'in_progress' THEN 1 ELSE 0 END), "
    "COUNT(DISTINCT CASE WHEN pr_number > 0 THEN pr_number END), "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN queue_time_ms ELSE 0 END), "
    "SUM(CASE WHEN queue_time_ms >= 0 THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms >= 0 THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN execution_time_ms > 10800000 THEN 1 ELSE 0 END), "
    "MIN(created_ms), MAX(created_ms) "
    "FROM jobs WHERE created_ms >= ? AND created_ms < ? AND event_type IN {} {} "
    "GROUP BY repo ORDER BY repo";

constexpr const char* kDailyStatsSql =
    "SELECT repo, created_ms / 86400000 AS day, COUNT(*), "
    "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END) "
    "FROM jobs WHERE created_ms >= ? AND created_ms < ? AND event_type IN {} "
    "GROUP BY repo, created_ms / 86400000 ORDER BY repo, day";

class SqliteStore : public Store {
 public:
  explicit SqliteStore(const std::string& path) : db_(sqlite_open(path, 5000)) { migrate(); }
  ~SqliteStore() override {
    cache_.clear();  // statements must be finalized before the connection closes
    sqlite3_close(db_);
  }

  int schema_version() override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "PRAGMA user_version");
    s.step();
    return static_cast<int>(s.i64(0));
  }

  bool accept_delivery(const DeliveryRecord& d, const std::vector<OutboxItem>& outbox) override {
    std::lock_guard lock(mu_);
    exec("BEGIN IMMEDIATE");
    try {
      Stmt ins(cache_,
               "INSERT INTO deliveries (delivery_id, event, action, head_sha, pr_number, "
               "received_ms, body) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
      ins.bind(1, d.delivery_id).bind(2, d.event).bind(3, d.action).bind(4, d.head_sha);
      ins.bind(5, d.pr_number).bind(6, d.received_ms).bind(7, d.body);
      ins.step();
      if (sqlite3_changes(db_) == 0) {
        exec("ROLLBACK");
        return false;
      }
      Stmt row(cache_,
               "INSERT INTO outbox (delivery_id, repo, event_type, callback_token, status, "
               "created_ms, next_attempt_ms, deadline_ms) VALUES (?,?,?,?,'pending',?,?,?)");
      for (const OutboxItem& o : outbox) {
        row.reset();
        row.bind(1, d.delivery_id).bind(2, o.repo).bind(3, o.event_type).bind(4, o.callback_token);
        row.bind(5, o.created_ms).bind(6, o.next_attempt_ms).bind(7, o.deadline_ms);
        row.step();
      }
      exec("COMMIT");
      return true;
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

  std::optional<DeliveryRecord> get_delivery(const std::string& id, bool with_body) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format("SELECT delivery_id, event, action, head_sha, pr_number, received_ms, "
                       "{} FROM deliveries WHERE delivery_id = ?",
                       with_body ? "body" : "''")
               .c_str());
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return DeliveryRecord{s.text(0), s.text(1), s.text(2), s.text(3),
                          s.i64(4),  s.i64(5),  s.text(6)};
  }

  std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format("UPDATE outbox SET leased = 1, next_attempt_ms = ? WHERE id IN "
                               "(SELECT id FROM outbox WHERE status = 'pending' AND "
                               "next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?) "
                               "RETURNING {}",
                               kOutboxColumns)
                       .c_str());
    s.bind(1, now_ms + lease_ms).bind(2, now_ms).bind(3, limit);
    std::vector<OutboxItem> out;
    while (s.step()) out.push_back(read_outbox(s));
    return out;
  }

  void mark_delivered(int64_t id, int attempts, int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE outbox SET status = 'delivered', leased = 0, attempts = ?, delivered_ms = ?, "
           "last_error = '' WHERE id = ?");
    s.bind(1, attempts).bind(2, now_ms).bind(3, id).step();
  }

  void mark_retry(int64_t id, int attempts, int64_t next_ms, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE outbox SET leased = 0, attempts = ?, next_attempt_ms = ?, last_error = ? "
           "WHERE id = ? AND status = 'pending'");
    s.bind(1, attempts).bind(2, next_ms).bind(3, error).bind(4, id).step();
  }

  void mark_failed(int64_t id, int attempts, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE outbox SET status = 'failed', leased = 0, attempts = ?, last_error = ? "
           "WHERE id = ? AND status = 'pending'");
    s.bind(1, attempts).bind(2, error).bind(3, id).step();
  }

  void release_leases(int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "UPDATE outbox SET leased = 0, next_attempt_ms = ? WHERE leased = 1");
    s.bind(1, now_ms).step();
  }

  std::optional<int64_t> next_due_ms() override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "SELECT MIN(next_attempt_ms), COUNT(*) FROM outbox WHERE status = 'pending'");
    s.step();
    if (s.i64(1) == 0) return std::nullopt;
    return s.i64(0);
  }

  std::vector<OutboxItem> outbox_for(const std::string& delivery_id) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? ORDER BY repo", kOutboxColumns)
               .c_str());
    s.bind(1, delivery_id);
    std::vector<OutboxItem> out;
    while (s.step()) out.push_back(read_outbox(s));
    return out;
  }

  OutboxCounts outbox_counts() override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "SELECT status, COUNT(*) FROM outbox GROUP BY status");
    OutboxCounts c;
    while (s.step()) {
      OutboxStatus st = parse_status(s.text(0));
      (st == OutboxStatus::kPending     ? c.pending
       : st == OutboxStatus::kDelivered ? c.delivered
                                        : c.failed) = s.i64(1);
    }
    return c;
  }

  void set_check_run_wanted(const std::string& sha, const std::string& repo,
                            int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "INSERT INTO check_run_wanted (head_sha, repo, created_ms) VALUES (?,?,?) "
           "ON CONFLICT DO NOTHING");
    s.bind(1, sha).bind(2, repo).bind(3, now_ms).step();
  }

  bool check_run_wanted(const std::string& sha, const std::string& repo) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "SELECT 1 FROM check_run_wanted WHERE head_sha = ? AND repo = ?");
    s.bind(1, sha).bind(2, repo);
    return s.step();
  }

  std::optional<OutboxItem> dispatch_record(const std::string& delivery_id,
                                            const std::string& repo) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? AND repo = ?", kOutboxColumns)
               .c_str());
    s.bind(1, delivery_id).bind(2, repo);
    if (!s.step()) return std::nullopt;
    return read_outbox(s);
  }

  std::optional<JobRecord> get_job(const std::string& key) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format("SELECT {} FROM jobs WHERE key = ?", kJobColumns).c_str());
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return read_job(s);
  }

  bool insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks) override {
    std::lock_guard lock(mu_);
    return in_transaction([&] {
      Stmt s(cache_, fmt::format("INSERT INTO jobs ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                                 kJobColumns, placeholders(kJobColumnCount))
                         .c_str());
      bind_job(s, job);
      s.step();
      if (sqlite3_changes(db_) == 0) return false;
      insert_tasks(tasks);
      return true;
    });
  }

  bool update_job(const JobRecord& job, const std::string& expected_status,
                  const std::vector<TaskItem>& tasks,
                  std::optional<bool> expected_check_run_created) override {
    std::lock_guard lock(mu_);
    return in_transaction([&] {
      // Replace the whole row, but only if nobody moved it since it was read.
      Stmt s(cache_, fmt::format("UPDATE jobs SET ({}) = ({}) WHERE key = ? AND status = ? AND "
                                 "(? < 0 OR check_run_created = ?)",
                                 kJobColumns, placeholders(kJobColumnCount))
                         .c_str());
      bind_job(s, job);
      int64_t flag = expected_check_run_created ? int64_t{*expected_check_run_created} : -1;
      s.bind(kJobColumnCount + 1, job.key).bind(kJobColumnCount + 2, expected_status);
      s.bind(kJobColumnCount + 3, flag).bind(kJobColumnCount + 4, flag);
      s.step();
      if (sqlite3_changes(db_) == 0) return false;
      insert_tasks(tasks);
      return true;
    });
  }

  std::vector<JobRecord> jobs_for_sha(const std::string& head_sha) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format("SELECT {} FROM jobs WHERE head_sha = ? ORDER BY key", kJobColumns).c_str());
    s.bind(1, head_sha);
    std::vector<JobRecord> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
  }

  std::vector<JobRecord> overdue_jobs(int64_t before_ms, int limit) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format("SELECT {} FROM jobs WHERE status = 'in_progress' AND "
                               "in_progress_ms < ? ORDER BY in_progress_ms LIMIT ?",
                               kJobColumns)
                       .c_str());
    s.bind(1, before_ms).bind(2, limit);
    std::vector<JobRecord> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
  }

  void enqueue_tasks(const std::vector<TaskItem>& tasks) override {
    std::lock_guard lock(mu_);
    in_transaction([&] {
      insert_tasks(tasks);
      return true;
    });
  }

  std::vector<TaskItem> claim_tasks(int64_t now_ms, int limit, int64_t lease_ms) override {
    std::lock_guard lock(mu_);
    // Only the oldest pending task of each ordering key is eligible; a leased one blocks its key.
    Stmt s(cache_, fmt::format("UPDATE tasks SET leased = 1, next_attempt_ms = ? WHERE id IN "
                               "(SELECT t.id FROM tasks t WHERE t.status = 'pending' AND "
                               "t.next_attempt_ms <= ? AND NOT EXISTS (SELECT 1 FROM tasks e WHERE "
                               "e.ordering_key = t.ordering_key AND e.status = 'pending' AND "
                               "e.id < t.id) ORDER BY t.id LIMIT ?) RETURNING {}",
                               kTaskColumns)
                       .c_str());
    s.bind(1, now_ms + lease_ms).bind(2, now_ms).bind(3, limit);
    std::vector<TaskItem> out;
    while (s.step()) out.push_back(read_task(s));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
  }

  void complete_task(int64_t id, int attempts) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE tasks SET status = 'done', leased = 0, attempts = ?, last_error = '' "
           "WHERE id = ?");
    s.bind(1, attempts).bind(2, id).step();
  }

  void retry_task(int64_t id, int attempts, int64_t next_ms, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE tasks SET leased = 0, attempts = ?, next_attempt_ms = ?, last_error = ? "
           "WHERE id = ? AND status = 'pending'");
    s.bind(1, attempts).bind(2, next_ms).bind(3, error).bind(4, id).step();
  }

  void fail_task(int64_t id, int attempts, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "UPDATE tasks SET status = 'failed', leased = 0, attempts = ?, last_error = ? "
           "WHERE id = ? AND status = 'pending'");
    s.bind(1, attempts).bind(2, error).bind(3, id).step();
  }

  TaskCounts task_counts() override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "SELECT status, COUNT(*) FROM tasks GROUP BY status");
    TaskCounts c;
    while (s.step()) {
      std::string st = s.text(0);
      (st == "pending" ? c.pending : st == "done" ? c.done : c.failed) = s.i64(1);
    }
    return c;
  }

  std::vector<TaskItem> tasks_of_kind(const std::string& kind) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format("SELECT {} FROM tasks WHERE kind = ? ORDER BY id", kTaskColumns).c_str());
    s.bind(1, kind);
    std::vector<TaskItem> out;
    while (s.step()) out.push_back(read_task(s));
    return out;
  }

  void set_meta(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "INSERT INTO meta (key, value) VALUES (?, ?) "
           "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    s.bind(1, key).bind(2, value).step();
  }

  std::optional<std::string> get_meta(const std::string& key) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, "SELECT value FROM meta WHERE key = ?");
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return s.text(0);
  }

  std::vector<RepoStats> repo_stats(int64_t from_ms, int64_t to_ms, JobFilter f,
                                    const std::string& repo) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           fmt::format(kRepoStatsSql, event_types(f), repo.empty() ? "" : "AND repo = ?").c_str());
    s.bind(1, from_ms).bind(2, to_ms);
    if (!repo.empty()) s.bind(3, repo);
    std::vector<RepoStats> out;
    while (s.step()) {
      RepoStats r;
      int i = 0;
      r.repo = s.text(i++);
      r.level = s.text(i++);
      for (int64_t* v : {&r.jobs, &r.success, &r.failure, &r.timed_out, &r.cancelled,
                         &r.in_progress, &r.prs, &r.queue_sum_ms, &r.queue_n, &r.exec_sum_ms,
                         &r.exec_n, &r.overruns, &r.first_ms, &r.last_ms})
        *v = s.i64(i++);
      out.push_back(r);
    }
    return out;
  }

  std::vector<DailyStats> daily_stats(int64_t from_ms, int64_t to_ms, JobFilter f) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format(kDailyStatsSql, event_types(f)).c_str());
    s.bind(1, from_ms).bind(2, to_ms);
    std::vector<DailyStats> out;
    while (s.step()) out.push_back({s.text(0), s.i64(1), s.i64(2), s.i64(3), s.i64(4)});
    return out;
  }

  std::vector<int64_t> repo_prs(const std::string& repo, int64_t from_ms, int64_t to_ms, int limit,
                                int offset, int64_t* total) override {
    std::lock_guard lock(mu_);
    Stmt c(cache_,
           "SELECT COUNT(DISTINCT pr_number) FROM jobs WHERE repo = ? AND created_ms >= ? "
           "AND created_ms < ? AND pr_number > 0");
    c.bind(1, repo).bind(2, from_ms).bind(3, to_ms);
    c.step();
    if (total) *total = c.i64(0);
    Stmt s(cache_,
           "SELECT pr_number FROM jobs WHERE repo = ? AND created_ms >= ? AND created_ms < ? "
           "AND pr_number > 0 GROUP BY pr_number ORDER BY MAX(created_ms) DESC, pr_number "
           "DESC LIMIT ? OFFSET ?");
    s.bind(1, repo).bind(2, from_ms).bind(3, to_ms).bind(4, limit).bind(5, offset);
    std::vector<int64_t> out;
    while (s.step()) out.push_back(s.i64(0));
    return out;
  }

  std::vector<JobRecord> repo_jobs_for_prs(const std::string& repo,
                                           const std::vector<int64_t>& prs) override {
    if (prs.empty()) return {};
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format("SELECT {} FROM jobs WHERE repo = ? AND pr_number IN ({}) ORDER BY "
                               "pr_number DESC, workflow_name, job_name, run_attempt",
                               kJobColumns, placeholders(static_cast<int>(prs.size())))
                       .c_str());
    s.bind(1, repo);
    for (size_t i = 0; i < prs.size(); ++i) s.bind(static_cast<int>(i) + 2, prs[i]);
    std::vector<JobRecord> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
  }

  std::vector<JobRecord> recent_jobs(const std::string& repo, int64_t from_ms, int64_t to_ms,
                                     JobFilter f, int limit, int offset, int64_t* total) override {
    std::lock_guard lock(mu_);
    std::string where =
        fmt::format("WHERE repo = ? AND created_ms >= ? AND created_ms < ? AND event_type IN {}",
                    event_types(f));
    Stmt c(cache_, ("SELECT COUNT(*) FROM jobs " + where).c_str());
    c.bind(1, repo).bind(2, from_ms).bind(3, to_ms);
    c.step();
    if (total) *total = c.i64(0);
    Stmt s(cache_,
           fmt::format("SELECT {} FROM jobs {} ORDER BY created_ms DESC, key LIMIT ? OFFSET ?",
                       kJobColumns, where)
               .c_str());
    s.bind(1, repo).bind(2, from_ms).bind(3, to_ms).bind(4, limit).bind(5, offset);
    std::vector<JobRecord> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
  }

  std::vector<int64_t> e2e_ms(const std::string& repo, int64_t from_ms, int64_t to_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_,
           "SELECT queue_time_ms + execution_time_ms FROM jobs WHERE repo = ? AND "
           "created_ms >= ? AND created_ms < ? AND queue_time_ms >= 0 AND "
           "execution_time_ms >= 0");
    s.bind(1, repo).bind(2, from_ms).bind(3, to_ms);
    std::vector<int64_t> out;
    while (s.step()) out.push_back(s.i64(0));
    return out;
  }

  std::vector<JobRecord> jobs_for_pr(int64_t pr_number) override {
    std::lock_guard lock(mu_);
    Stmt s(cache_, fmt::format("SELECT {} FROM jobs WHERE pr_number = ? ORDER BY repo, "
                               "workflow_name, job_name, run_attempt",
                               kJobColumns)
                       .c_str());
    s.bind(1, pr_number);
    std::vector<JobRecord> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
  }

  void insert_jobs_bulk(const std::vector<JobRecord>& jobs) override {
    std::lock_guard lock(mu_);
    in_transaction([&] {
      Stmt s(cache_, fmt::format("INSERT INTO jobs ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                                 kJobColumns, placeholders(kJobColumnCount))
                         .c_str());
      for (const JobRecord& j : jobs) {
        s.reset();
        bind_job(s, j);
        s.step();
      }
      return true;
    });
  }

  void record_level(const std::string& repo, const std::string& level, int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt last(cache_,
              "SELECT level FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1");
    last.bind(1, repo);
    if (last.step() && last.text(0) == level) return;
    Stmt s(cache_,
           "INSERT INTO level_history (repo, level, since_ms) VALUES (?,?,?) "
           "ON CONFLICT DO NOTHING");
    s.bind(1, repo).bind(2, level).bind(3, now_ms).step();
  }

  std::optional<int64_t> level_since(const std::string& repo, const std::string& level) override {
    std::lock_guard lock(mu_);
    Stmt s(
        db_,
        "SELECT level, since_ms FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1");
    s.bind(1, repo);
    if (!s.step() || s.text(0) != level) return std::nullopt;
    return s.i64(1);
  }

 private:
  // Runs f inside BEGIN IMMEDIATE; commits if it returns true, rolls back otherwise.
  template <typename F>
  bool in_transaction(F&& f) {
    exec("BEGIN IMMEDIATE");
    try {
      bool ok = f();
      exec(ok ? "COMMIT" : "ROLLBACK");
      return ok;
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

  void insert_tasks(const std::vector<TaskItem>& tasks) {
    if (tasks.empty()) return;
    Stmt s(cache_,
           "INSERT INTO tasks (kind, ordering_key, payload, status, created_ms, next_attempt_ms) "
           "VALUES (?,?,?,'pending',?,?)");
    for (const TaskItem& t : tasks) {
      s.reset();
      s.bind(1, t.kind).bind(2, t.ordering_key).bind(3, t.payload).bind(4, t.created_ms);
      s.bind(5, t.next_attempt_ms).step();
    }
  }

  void exec(const std::string& sql) { sqlite_exec(db_, sql); }

  void migrate() {
    std::lock_guard lock(mu_);
    const auto& steps = migrations(SqlDialect::kSqlite);
    exec("BEGIN IMMEDIATE");
    try {
      int current = 0;
      {  // finalized before the steps run: DROP INDEX fails while a statement is open
        Stmt v(db_, "PRAGMA user_version");
        v.step();
        current = static_cast<int>(v.i64(0));
      }
      if (current > static_cast<int>(steps.size()))
        throw Error(fmt::format("sqlite: database schema version {} is newer than this ootci ({})",
                                current, steps.size()));
      for (size_t i = current; i < steps.size(); ++i) exec(steps[i]);
      exec(fmt::format("PRAGMA user_version = {}", steps.size()));
      exec("COMMIT");
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

  std::mutex mu_;
  sqlite3* db_ = nullptr;
  StmtCache cache_{&db_};
};

}  // namespace

std::unique_ptr<Store> open_sqlite_store(const std::string& path) {
  return std::make_unique<SqliteStore>(path);
}

}  // namespace ootci
