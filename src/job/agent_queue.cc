#include "job/agent_queue.h"

#include <fmt/format.h>

#include "base/enum_names.h"
#include "base/error.h"
#include "evidence/run_status.h"
#include "sql/migrate.h"
#include "sql/record_columns.h"

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

const RecordColumns<AgentJob>& job_columns() {
  static const RecordColumns<AgentJob> columns{
      column<&AgentJob::id>("id"),
      column<&AgentJob::delivery_id>("delivery_id"),
      column<&AgentJob::event_type>("event_type"),
      column<&AgentJob::client_payload>("client_payload"),
      column<&AgentJob::supersede_key>("supersede_key"),
      column<&AgentJob::should_build>("should_build"),
      column<&AgentJob::reason>("reason"),
      column<&AgentJob::upstream_sha>("upstream_sha"),
      column<&AgentJob::pr_number>("pr_number"),
      {"state", [](const AgentJob& j) { return SqlParam::owned(to_string(j.state)); },
       [](AgentJob& j, const SqlRow& row, int i) { j.state = parse_state(row.text(i), j.id); }},
      column<&AgentJob::attempt>("attempt"),
      column<&AgentJob::run_id>("run_id"),
      column<&AgentJob::in_progress_reported>("in_progress_reported"),
      {"conclusion", [](const AgentJob& j) { return SqlParam::owned(to_string(j.conclusion)); },
       [](AgentJob& j, const SqlRow& row, int i) {
         j.conclusion = parse_stored_conclusion(
             row.text(i), [&] { return fmt::format("agent queue: job {}", j.id); });
       }},
      column<&AgentJob::error>("error"),
      column<&AgentJob::received_ms>("received_ms"),
      column<&AgentJob::started_ms>("started_ms"),
      column<&AgentJob::ended_ms>("ended_ms"),
      column<&AgentJob::base_sha>("base_sha"),
  };
  return columns;
}

// What a new job is written with; the rest are the table's defaults.
const RecordColumns<AgentJob>& new_job_columns() {
  static const RecordColumns<AgentJob> columns = job_columns().subset(
      {"delivery_id", "event_type", "client_payload", "supersede_key", "should_build", "reason",
       "upstream_sha", "pr_number", "state", "received_ms", "ended_ms", "base_sha"});
  return columns;
}

AgentJob read_job(const SqlRow& r) {
  return job_columns().read(r);
}

std::string select_sql(const char* where) {
  return fmt::format("SELECT {} FROM jobs {}", job_columns().names(), where);
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
    int64_t id = 0;
    tx.each(fmt::format("INSERT INTO jobs ({}) VALUES ({}) RETURNING id", new_job_columns().names(),
                        new_job_columns().placeholders()),
            new_job_columns().bind(job), [&](const SqlRow& r) { id = r.i64(0); });
    return {id, true};
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
