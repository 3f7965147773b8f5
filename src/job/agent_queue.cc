#include "job/agent_queue.h"

#include <fmt/format.h>

#include "base/enum_names.h"
#include "base/error.h"
#include "sql/migrate.h"

namespace ootci {
namespace {

constexpr EnumName<JobState> kJobStateNames[] = {
    {JobState::kQueued, "queued"},       {JobState::kRunning, "running"}, {JobState::kDone, "done"},
    {JobState::kCancelled, "cancelled"}, {JobState::kSkipped, "skipped"},
};

JobState parse_state(const std::string& text, int64_t id) {
  if (auto s = enum_parse(kJobStateNames, text)) return *s;
  throw Error(
      fmt::format("agent queue: job {} has state '{}', which this ootci does not know", id, text));
}

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

// Version 2: an open PR's base SHA, so its tests can be a staged selection of what it changes.
constexpr const char* kBaseSha = "ALTER TABLE jobs ADD COLUMN base_sha TEXT NOT NULL DEFAULT '';";

constexpr const char* kColumns =
    "id, delivery_id, event_type, client_payload, supersede_key, should_build, reason, "
    "upstream_sha, pr_number, state, attempt, run_id, in_progress_reported, conclusion, error, "
    "received_ms, started_ms, ended_ms, base_sha";

AgentJob read_job(const SqlRow& s) {
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
  j.state = parse_state(s.text(i++), j.id);
  j.attempt = static_cast<int>(s.i64(i++));
  j.run_id = s.text(i++);
  j.in_progress_reported = s.i64(i++) != 0;
  std::string conclusion = s.text(i++);
  if (!conclusion.empty()) {
    j.conclusion = parse_conclusion(conclusion);
    if (!j.conclusion)
      throw Error(fmt::format("agent queue: job {} has conclusion '{}', not one of {}", j.id,
                              conclusion, conclusion_names()));
  }
  j.error = s.text(i++);
  j.received_ms = s.i64(i++);
  j.started_ms = s.i64(i++);
  j.ended_ms = s.i64(i++);
  j.base_sha = s.text(i++);
  return j;
}

std::string select_sql(const char* where) {
  return std::string("SELECT ") + kColumns + " FROM jobs " + where;
}

int64_t read_id(const SqlRow& r) {
  return r.i64(0);
}

}  // namespace

std::string to_string(JobState state) {
  return std::string(enum_text(kJobStateNames, state));
}

// The first schema used CREATE ... IF NOT EXISTS and recorded no version: a queue from then is
// at version 0 and its step 1 finds the tables already there.
AgentQueue::AgentQueue(const std::string& path) : db_(open_sqlite_db(path, 10000)) {
  migrate(*db_, SchemaHistory{"agent queue", {kSchema, kBaseSha}, nullptr});
}

AgentQueue::~AgentQueue() = default;

std::pair<int64_t, bool> AgentQueue::add(const AgentJob& job) {
  return db_->write("add", [&](SqlTx& tx) -> std::pair<int64_t, bool> {
    auto existing = tx.first("SELECT id FROM jobs WHERE delivery_id = ? AND event_type = ?",
                             {job.delivery_id, job.event_type}, read_id);
    if (existing) return {*existing, false};
    auto id = tx.first(
        "INSERT INTO jobs (delivery_id, event_type, client_payload, supersede_key, "
        "should_build, reason, upstream_sha, pr_number, state, received_ms, ended_ms, base_sha) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
        {job.delivery_id, job.event_type, job.client_payload, job.supersede_key, job.should_build,
         job.reason, job.upstream_sha, job.pr_number, to_string(job.state), job.received_ms,
         job.ended_ms, job.base_sha},
        read_id);
    return {id.value_or(0), true};
  });
}

std::vector<int64_t> AgentQueue::supersede(const std::string& key, int64_t newer_id, int64_t now) {
  return db_->write("supersede", [&](SqlTx& tx) {
    tx.exec(
        "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', ended_ms = ?, "
        "error = 'superseded by job ' || ? "
        "WHERE supersede_key = ? AND id < ? AND state = 'queued'",
        {now, newer_id, key, newer_id});
    return tx.all("SELECT id FROM jobs WHERE supersede_key = ? AND id < ? AND state = 'running'",
                  {key, newer_id}, read_id);
  });
}

std::optional<AgentJob> AgentQueue::claim(int64_t now) {
  return db_->write("claim", [&](SqlTx& tx) {
    auto job = tx.first(select_sql("WHERE state = 'queued' ORDER BY id LIMIT 1"), {}, read_job);
    if (!job) return job;
    tx.exec(
        "UPDATE jobs SET state = 'running', started_ms = CASE WHEN started_ms = 0 THEN ? "
        "ELSE started_ms END WHERE id = ?",
        {now, job->id});
    job->state = JobState::kRunning;
    if (job->started_ms == 0) job->started_ms = now;
    return job;
  });
}

int AgentQueue::requeue_running() {
  return static_cast<int>(db_->write("requeue_running", [](SqlTx& tx) {
    return tx.exec("UPDATE jobs SET state = 'queued' WHERE state = 'running'");
  }));
}

void AgentQueue::set_run(int64_t id, const std::string& run_id) {
  db_->write("set_run", [&](SqlTx& tx) {
    tx.exec("UPDATE jobs SET run_id = ? WHERE id = ?", {run_id, id});
  });
}

void AgentQueue::set_in_progress_reported(int64_t id) {
  db_->write("set_in_progress_reported", [&](SqlTx& tx) {
    tx.exec("UPDATE jobs SET in_progress_reported = 1 WHERE id = ?", {id});
  });
}

JobState AgentQueue::finish(int64_t id, JobState state, Conclusion conclusion,
                            const std::string& error, int64_t now) {
  return db_->write("finish", [&](SqlTx& tx) {
    tx.exec(
        "UPDATE jobs SET state = ?, conclusion = ?, error = ?, ended_ms = ? "
        "WHERE id = ? AND state NOT IN ('cancelled', 'done', 'skipped')",
        {to_string(state), to_string(conclusion), error, now, id});
    auto now_state = tx.first("SELECT state FROM jobs WHERE id = ?", {id},
                              [](const SqlRow& r) { return r.text(0); });
    if (!now_state) throw Error(fmt::format("agent queue: finish job {}: no such job", id));
    return parse_state(*now_state, id);
  });
}

std::optional<AgentJob> AgentQueue::get(int64_t id) {
  return db_->read("get",
                   [&](SqlTx& tx) { return tx.first(select_sql("WHERE id = ?"), {id}, read_job); });
}

std::vector<AgentJob> AgentQueue::recent(int limit) {
  return db_->read("recent", [&](SqlTx& tx) {
    return tx.all(select_sql("ORDER BY id DESC LIMIT ?"), {limit}, read_job);
  });
}

std::map<std::string, int64_t> AgentQueue::count_by_state() {
  return db_->read("count_by_state", [&](SqlTx& tx) {
    std::map<std::string, int64_t> counts;
    for (const auto& [state, text] : kJobStateNames) counts[std::string(text)] = 0;
    tx.each("SELECT state, COUNT(*) FROM jobs GROUP BY state", {},
            [&](const SqlRow& r) { counts[r.text(0)] = r.i64(1); });
    return counts;
  });
}

}  // namespace ootci
