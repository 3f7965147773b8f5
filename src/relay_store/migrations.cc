#include "relay_store/migrations.h"

#include <string>

#include "sql/sql_dialect.h"

namespace ootci {
namespace {

std::string v1(SqlDialect d) {
  std::string serial = serial_key(d);
  return R"(
CREATE TABLE deliveries (
  delivery_id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  action TEXT NOT NULL,
  head_sha TEXT NOT NULL,
  pr_number BIGINT NOT NULL,
  received_ms BIGINT NOT NULL,
  body TEXT NOT NULL
);
CREATE TABLE outbox (
  id )" + serial +
         R"(,
  delivery_id TEXT NOT NULL REFERENCES deliveries(delivery_id),
  repo TEXT NOT NULL,
  event_type TEXT NOT NULL,
  callback_token TEXT NOT NULL,
  status TEXT NOT NULL,
  leased INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  next_attempt_ms BIGINT NOT NULL,
  deadline_ms BIGINT NOT NULL,
  delivered_ms BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  UNIQUE (delivery_id, repo)
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_ms);
CREATE TABLE check_run_wanted (
  head_sha TEXT NOT NULL,
  repo TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (head_sha, repo)
);
)";
}

// Callback state machine, durable side-effect tasks, shared meta values.
std::string v2(SqlDialect d) {
  std::string serial = serial_key(d);
  return R"(
CREATE TABLE jobs (
  key TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL,
  repo TEXT NOT NULL,
  run_id BIGINT NOT NULL,
  run_attempt BIGINT NOT NULL,
  job_name TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  event_type TEXT NOT NULL,
  head_sha TEXT NOT NULL,
  pr_number BIGINT NOT NULL,
  level TEXT NOT NULL,
  status TEXT NOT NULL,
  conclusion TEXT NOT NULL,
  dispatched_ms BIGINT NOT NULL,
  in_progress_ms BIGINT NOT NULL,
  completed_ms BIGINT NOT NULL,
  queue_time_ms BIGINT NOT NULL,
  execution_time_ms BIGINT NOT NULL,
  in_progress_hash TEXT NOT NULL,
  completed_hash TEXT NOT NULL,
  tests_passed BIGINT NOT NULL,
  tests_failed BIGINT NOT NULL,
  tests_skipped BIGINT NOT NULL,
  tests_total BIGINT NOT NULL,
  workflow_url TEXT NOT NULL,
  check_run_id TEXT NOT NULL,
  artifact_url TEXT NOT NULL,
  check_run_created INTEGER NOT NULL,
  last_body TEXT NOT NULL,
  failed_tests_json TEXT NOT NULL,
  triage_json TEXT NOT NULL
);
CREATE INDEX jobs_head_sha ON jobs (head_sha);
CREATE INDEX jobs_status_started ON jobs (status, in_progress_ms);
CREATE TABLE tasks (
  id )" + serial +
         R"(,
  kind TEXT NOT NULL,
  ordering_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  leased INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  next_attempt_ms BIGINT NOT NULL,
  last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX tasks_due ON tasks (status, next_attempt_ms);
CREATE INDEX tasks_ordering ON tasks (ordering_key, status, id);
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)";
}

// HUD: the job time axis, the indexes its queries need, level tenure.
std::string v3() {
  return R"(
ALTER TABLE jobs ADD COLUMN created_ms BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET created_ms = CASE WHEN in_progress_ms >= 0 THEN in_progress_ms ELSE completed_ms END;
CREATE INDEX jobs_created ON jobs (created_ms);
CREATE INDEX jobs_repo_created ON jobs (repo, created_ms);
CREATE INDEX jobs_pr ON jobs (pr_number);
CREATE TABLE level_history (
  repo TEXT NOT NULL,
  level TEXT NOT NULL,
  since_ms BIGINT NOT NULL,
  PRIMARY KEY (repo, since_ms)
);
)";
}

// HUD at scale: covering indexes, so the aggregates read index entries instead of wide job rows
// (a job row carries its last callback body, tens of KB).
std::string v4() {
  return R"(
CREATE INDEX jobs_hud_window ON jobs (created_ms, repo, event_type, status, conclusion, pr_number,
  queue_time_ms, execution_time_ms, level);
CREATE INDEX jobs_hud_repo ON jobs (repo, created_ms, event_type, status, conclusion, pr_number,
  queue_time_ms, execution_time_ms, level);
DROP INDEX jobs_created;
DROP INDEX jobs_repo_created;
)";
}

// Buildkite's run ids are build UUIDs: run_id is text. SQLite keeps a non-integer value as TEXT in
// a BIGINT column as it is, and its rows read back the same, so only PostgreSQL changes the type.
std::string v5(SqlDialect d) {
  return d == SqlDialect::kPostgres
             ? "ALTER TABLE jobs ALTER COLUMN run_id TYPE TEXT USING run_id::text;"
             : "SELECT 1;";
}

int user_version(SqlTx& tx) {
  int version = 0;
  tx.each("PRAGMA user_version", {},
          [&](const SqlRow& r) { version = static_cast<int>(r.i64(0)); });
  return version;
}

SchemaHistory history(SqlDialect d) {
  // The dialects differ only in the auto-increment key type and one column type change.
  SchemaHistory h{"relay store", {v1(d), v2(d), v3(), v4(), v5(d)}, nullptr};
  // PostgreSQL relay stores always had the schema_version table.
  if (d == SqlDialect::kSqlite) h.legacy_version = user_version;
  return h;
}

}  // namespace

const SchemaHistory& relay_schema(SqlDialect dialect) {
  static const SchemaHistory sqlite = history(SqlDialect::kSqlite);
  static const SchemaHistory postgres = history(SqlDialect::kPostgres);
  return dialect == SqlDialect::kSqlite ? sqlite : postgres;
}

}  // namespace ootci
