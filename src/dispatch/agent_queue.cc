#include "dispatch/agent_queue.h"

#include "base/error.h"

namespace ootci {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  delivery_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  client_payload TEXT NOT NULL,
  supersede_key TEXT NOT NULL,
  should_build INTEGER NOT NULL,
  reason TEXT NOT NULL,
  upstream_sha TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 1,
  run_id TEXT NOT NULL DEFAULT '',
  in_progress_reported INTEGER NOT NULL DEFAULT 0,
  conclusion TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  received_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  UNIQUE (delivery_id, event_type)
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, id);
CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs(supersede_key, id);
)sql";

constexpr const char* kColumns =
    "id, delivery_id, event_type, client_payload, supersede_key, should_build, reason, "
    "upstream_sha, pr_number, state, attempt, run_id, in_progress_reported, conclusion, error, "
    "received_ms, started_ms, ended_ms";

AgentJob read_job(SqliteStmt& s) {
  AgentJob j;
  int i = 0;
  j.id = s.i64(i++);
  j.delivery_id = s.text(i++);
  j.event_type = s.text(i++);
  j.client_payload = s.text(i++);
  j.supersede_key = s.text(i++);
  j.should_build = s.i64(i++) != 0;
  j.reason = s.text(i++);
  j.upstream_sha = s.text(i++);
  j.pr_number = s.i64(i++);
  j.state = s.text(i++);
  j.attempt = static_cast<int>(s.i64(i++));
  j.run_id = s.text(i++);
  j.in_progress_reported = s.i64(i++) != 0;
  j.conclusion = s.text(i++);
  j.error = s.text(i++);
  j.received_ms = s.i64(i++);
  j.started_ms = s.i64(i++);
  j.ended_ms = s.i64(i++);
  return j;
}

std::string select_sql(const char* where) {
  return std::string("SELECT ") + kColumns + " FROM jobs " + where;
}

}  // namespace

AgentQueue::AgentQueue(const std::string& path) : db_(sqlite_open(path, 10000)) {
  sqlite_exec(db_, kSchema);
}

AgentQueue::~AgentQueue() {
  stmts_.clear();
  sqlite3_close(db_);
}

std::pair<int64_t, bool> AgentQueue::add(const AgentJob& job) {
  std::lock_guard lock(mu_);
  SqliteStmt existing(stmts_, "SELECT id FROM jobs WHERE delivery_id = ? AND event_type = ?");
  existing.bind(1, job.delivery_id).bind(2, job.event_type);
  if (existing.step()) return {existing.i64(0), false};
  SqliteStmt s(stmts_,
               "INSERT INTO jobs (delivery_id, event_type, client_payload, supersede_key, "
               "should_build, reason, upstream_sha, pr_number, state, received_ms, ended_ms) "
               "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, job.delivery_id).bind(2, job.event_type).bind(3, job.client_payload);
  s.bind(4, job.supersede_key).bind(5, job.should_build).bind(6, job.reason);
  s.bind(7, job.upstream_sha).bind(8, job.pr_number).bind(9, job.state);
  s.bind(10, job.received_ms).bind(11, job.ended_ms);
  s.step();
  return {sqlite3_last_insert_rowid(db_), true};
}

std::vector<int64_t> AgentQueue::supersede(const std::string& key, int64_t newer_id, int64_t now) {
  std::lock_guard lock(mu_);
  SqliteStmt cancel(stmts_,
                    "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', ended_ms = ?, "
                    "error = 'superseded by job ' || ? "
                    "WHERE supersede_key = ? AND id < ? AND state = 'queued'");
  cancel.bind(1, now).bind(2, newer_id).bind(3, key).bind(4, newer_id);
  cancel.step();
  SqliteStmt running(
      stmts_, "SELECT id FROM jobs WHERE supersede_key = ? AND id < ? AND state = 'running'");
  running.bind(1, key).bind(2, newer_id);
  std::vector<int64_t> ids;
  while (running.step()) ids.push_back(running.i64(0));
  return ids;
}

std::optional<AgentJob> AgentQueue::claim(int64_t now) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, select_sql("WHERE state = 'queued' ORDER BY id LIMIT 1"));
  if (!s.step()) return std::nullopt;
  AgentJob job = read_job(s);
  SqliteStmt u(stmts_,
               "UPDATE jobs SET state = 'running', started_ms = CASE WHEN started_ms = 0 THEN ? "
               "ELSE started_ms END WHERE id = ?");
  u.bind(1, now).bind(2, job.id);
  u.step();
  job.state = "running";
  if (job.started_ms == 0) job.started_ms = now;
  return job;
}

int AgentQueue::requeue_running() {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, "UPDATE jobs SET state = 'queued' WHERE state = 'running'");
  s.step();
  return sqlite3_changes(db_);
}

void AgentQueue::set_run(int64_t id, const std::string& run_id) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, "UPDATE jobs SET run_id = ? WHERE id = ?");
  s.bind(1, run_id).bind(2, id);
  s.step();
}

void AgentQueue::set_in_progress_reported(int64_t id) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, "UPDATE jobs SET in_progress_reported = 1 WHERE id = ?");
  s.bind(1, id);
  s.step();
}

std::string AgentQueue::finish(int64_t id, const std::string& state, const std::string& conclusion,
                               const std::string& error, int64_t now) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_,
               "UPDATE jobs SET state = ?, conclusion = ?, error = ?, ended_ms = ? "
               "WHERE id = ? AND state NOT IN ('cancelled', 'done', 'skipped')");
  s.bind(1, state).bind(2, conclusion).bind(3, error).bind(4, now).bind(5, id);
  s.step();
  SqliteStmt q(stmts_, "SELECT state FROM jobs WHERE id = ?");
  q.bind(1, id);
  return q.step() ? q.text(0) : std::string();
}

std::optional<AgentJob> AgentQueue::get(int64_t id) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, select_sql("WHERE id = ?"));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_job(s);
}

std::vector<AgentJob> AgentQueue::recent(int limit) {
  std::lock_guard lock(mu_);
  SqliteStmt s(stmts_, select_sql("ORDER BY id DESC LIMIT ?"));
  s.bind(1, limit);
  std::vector<AgentJob> jobs;
  while (s.step()) jobs.push_back(read_job(s));
  return jobs;
}

std::map<std::string, int64_t> AgentQueue::count_by_state() {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> counts;
  for (const char* state : {"queued", "running", "done", "cancelled", "skipped"}) counts[state] = 0;
  SqliteStmt s(stmts_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  while (s.step()) counts[s.text(0)] = s.i64(1);
  return counts;
}

}  // namespace ootci
