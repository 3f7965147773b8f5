#include "relay_store/migrations.h"

#include <fmt/format.h>

#include <string>

#include "relay_store/hud_rollup.h"
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

// HUD rollups (issue 22): per class, hour and repo the counts the aggregate pages need; per
// repo, day and tenth of a minute the end-to-end times; per repo, class and PR its newest job.
// Filled here from the jobs already stored, then kept by every job write.
std::string v6() {
  std::string cls = job_class_sql();
  std::string bucket = e2e_bucket_sql();
  return R"(
CREATE TABLE hud_hourly (
  job_class TEXT NOT NULL,
  hour BIGINT NOT NULL,
  repo TEXT NOT NULL,
  level TEXT NOT NULL,
  jobs BIGINT NOT NULL,
  success BIGINT NOT NULL,
  failure BIGINT NOT NULL,
  timed_out BIGINT NOT NULL,
  cancelled BIGINT NOT NULL,
  in_progress BIGINT NOT NULL,
  queue_sum_ms BIGINT NOT NULL,
  queue_n BIGINT NOT NULL,
  exec_sum_ms BIGINT NOT NULL,
  exec_n BIGINT NOT NULL,
  overruns BIGINT NOT NULL,
  prs_last BIGINT NOT NULL,
  first_ms BIGINT NOT NULL,
  last_ms BIGINT NOT NULL,
  PRIMARY KEY (job_class, hour, repo)
);
CREATE TABLE hud_e2e_daily (
  repo TEXT NOT NULL,
  day BIGINT NOT NULL,
  tenth_min BIGINT NOT NULL,
  jobs BIGINT NOT NULL,
  PRIMARY KEY (repo, day, tenth_min)
);
CREATE TABLE hud_pr_latest (
  repo TEXT NOT NULL,
  job_class TEXT NOT NULL,
  pr_number BIGINT NOT NULL,
  last_ms BIGINT NOT NULL,
  PRIMARY KEY (repo, job_class, pr_number)
);
CREATE INDEX hud_pr_latest_repo ON hud_pr_latest (repo, job_class, last_ms, pr_number);
CREATE INDEX hud_pr_latest_class ON hud_pr_latest (job_class, last_ms, repo);
CREATE INDEX jobs_repo_event ON jobs (repo, event_type, created_ms);
CREATE INDEX jobs_repo_pr ON jobs (repo, pr_number, created_ms);
INSERT INTO hud_hourly SELECT )" +
         cls + R"(, created_ms / 3600000, repo, MAX(level COLLATE "C"), COUNT(*),
  SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END),
  SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END),
  SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END),
  SUM(CASE WHEN conclusion = 'cancelled' THEN 1 ELSE 0 END),
  SUM(CASE WHEN status = 'in_progress' THEN 1 ELSE 0 END),
  SUM(CASE WHEN queue_time_ms >= 0 THEN queue_time_ms ELSE 0 END),
  SUM(CASE WHEN queue_time_ms >= 0 THEN 1 ELSE 0 END),
  SUM(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE 0 END),
  SUM(CASE WHEN execution_time_ms >= 0 THEN 1 ELSE 0 END),
  SUM(CASE WHEN execution_time_ms > 10800000 THEN 1 ELSE 0 END),
  0, MIN(created_ms), MAX(created_ms)
  FROM jobs GROUP BY 1, 2, 3;
INSERT INTO hud_e2e_daily SELECT repo, created_ms / 86400000, )" +
         bucket + R"(, COUNT(*) FROM jobs
  WHERE queue_time_ms >= 0 AND execution_time_ms >= 0 GROUP BY 1, 2, 3;
INSERT INTO hud_pr_latest SELECT repo, )" +
         cls + R"(, pr_number, MAX(created_ms) FROM jobs WHERE pr_number > 0 GROUP BY 1, 2, 3;
UPDATE hud_hourly SET prs_last = (SELECT COUNT(*) FROM hud_pr_latest p
  WHERE p.job_class = hud_hourly.job_class AND p.last_ms >= hud_hourly.hour * 3600000
  AND p.last_ms < (hud_hourly.hour + 1) * 3600000 AND p.repo = hud_hourly.repo);
)";
}

// Reliability (issue 18): a lease names its claim, so a worker whose lease ran out cannot complete
// a row another replica took over; the callback rate limit's window is shared by every replica.
std::string v7() {
  return R"(
ALTER TABLE outbox ADD COLUMN lease TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN lease TEXT NOT NULL DEFAULT '';
CREATE TABLE rate_hits (
  key TEXT NOT NULL,
  second BIGINT NOT NULL,
  hits BIGINT NOT NULL,
  PRIMARY KEY (key, second)
);
)";
}

// The level lifecycle (issue 38). Jobs keep their verdict's category and confidence (the
// verdict-aware pass rate) and whether a later nightly attempt superseded them (the nightly
// summary counts the latest attempt only); the hourly rollups keep the longest execution and the
// failures blamed on upstream. Pending demotions and webhook redelivery requests are shared by
// the replicas. Existing rows are back-filled; the nightly rollups lose what superseded attempts
// had added.
std::string v8(SqlDialect d) {
  std::string nightly = event_types_sql(JobFilter::kNightly);
  std::string hour_rows =
      "jobs.repo = hud_hourly.repo AND jobs.created_ms >= hud_hourly.hour * 3600000 AND "
      "jobs.created_ms < (hud_hourly.hour + 1) * 3600000 AND " +
      job_class_sql() + " = hud_hourly.job_class AND jobs.superseded = 0";
  std::string out = R"(
ALTER TABLE jobs ADD COLUMN verdict_category TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN verdict_confidence TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET verdict_category = COALESCE()" +
                    json_text(d, "triage_json", "category") + R"(, ''),
  verdict_confidence = COALESCE()" +
                    json_text(d, "triage_json", "confidence") + R"(, '') WHERE triage_json <> '';
CREATE INDEX jobs_run ON jobs (repo, run_id, job_name);
UPDATE jobs SET superseded = 1 WHERE event_type IN )" +
                    nightly + R"( AND EXISTS (SELECT 1 FROM jobs later
  WHERE later.repo = jobs.repo AND later.run_id = jobs.run_id AND later.job_name = jobs.job_name
  AND later.event_type IN )" +
                    nightly + R"( AND later.run_attempt > jobs.run_attempt);
ALTER TABLE hud_hourly ADD COLUMN exec_max_ms BIGINT NOT NULL DEFAULT -1;
ALTER TABLE hud_hourly ADD COLUMN failure_upstream BIGINT NOT NULL DEFAULT 0;
CREATE TEMPORARY TABLE superseded_hours AS SELECT created_ms / 3600000 AS hour, repo,
  COUNT(*) AS jobs,
  SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END) AS success,
  SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END) AS failure,
  SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END) AS timed_out,
  SUM(CASE WHEN conclusion = 'cancelled' THEN 1 ELSE 0 END) AS cancelled,
  SUM(CASE WHEN status = 'in_progress' THEN 1 ELSE 0 END) AS in_progress,
  SUM(CASE WHEN queue_time_ms >= 0 THEN queue_time_ms ELSE 0 END) AS queue_sum_ms,
  SUM(CASE WHEN queue_time_ms >= 0 THEN 1 ELSE 0 END) AS queue_n,
  SUM(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE 0 END) AS exec_sum_ms,
  SUM(CASE WHEN execution_time_ms >= 0 THEN 1 ELSE 0 END) AS exec_n,
  SUM(CASE WHEN execution_time_ms > 10800000 THEN 1 ELSE 0 END) AS overruns
  FROM jobs WHERE superseded = 1 GROUP BY 1, 2;
)";
  std::string minus;
  for (const char* c : {"jobs", "success", "failure", "timed_out", "cancelled", "in_progress",
                        "queue_sum_ms", "queue_n", "exec_sum_ms", "exec_n", "overruns"})
    minus += fmt::format(
        "{}{} = {} - COALESCE((SELECT s.{} FROM superseded_hours s WHERE s.hour = "
        "hud_hourly.hour AND s.repo = hud_hourly.repo), 0)",
        minus.empty() ? "" : ",\n  ", c, c, c);
  out += "UPDATE hud_hourly SET " + minus + " WHERE job_class = 'nightly';\n";
  // As a write that supersedes an attempt does: the hour's level, first and last job are read
  // again from the jobs still counted there (kept when none is).
  std::string recount;
  for (auto [column, agg] : {std::pair{"level", "MAX(level COLLATE \"C\")"},
                             {"first_ms", "MIN(created_ms)"},
                             {"last_ms", "MAX(created_ms)"}})
    recount += fmt::format("{}{} = COALESCE((SELECT {} FROM jobs WHERE {}), {})",
                           recount.empty() ? "" : ",\n  ", column, agg, hour_rows, column);
  out += "UPDATE hud_hourly SET " + recount +
         " WHERE job_class = 'nightly' AND EXISTS (SELECT 1 FROM superseded_hours s WHERE "
         "s.hour = hud_hourly.hour AND s.repo = hud_hourly.repo);\n";
  out += "DROP TABLE superseded_hours;\n";
  out += std::string(
             "UPDATE hud_e2e_daily SET jobs = jobs - (SELECT COUNT(*) FROM jobs WHERE "
             "jobs.superseded = 1 AND jobs.repo = hud_e2e_daily.repo AND "
             "jobs.created_ms / 86400000 = hud_e2e_daily.day AND jobs.queue_time_ms >= 0 "
             "AND jobs.execution_time_ms >= 0 AND ") +
         e2e_bucket_sql() +
         " = hud_e2e_daily.tenth_min);\nDELETE FROM hud_e2e_daily WHERE jobs = 0;\n";
  out +=
      "UPDATE hud_hourly SET exec_max_ms = COALESCE((SELECT MAX(execution_time_ms) FROM jobs "
      "WHERE " +
      hour_rows + "), -1),\n  failure_upstream = (SELECT COUNT(*) FROM jobs WHERE " + hour_rows +
      " AND conclusion = 'failure' AND verdict_category = 'upstream' AND "
      "verdict_confidence = 'high');\n";
  // The level status reads a 14-day end-to-end histogram per repo (about 20,000 rows at 1M
  // jobs); with `jobs` in an index they come from the index alone, not from scattered table rows
  // (3-4x faster on both stores at 1M jobs).
  out += R"(
CREATE INDEX hud_e2e_daily_jobs ON hud_e2e_daily (repo, day, tenth_min, jobs);
CREATE TABLE demotions (
  repo TEXT PRIMARY KEY,
  since_ms BIGINT NOT NULL,
  pr_number BIGINT NOT NULL,
  pr_url TEXT NOT NULL
);
CREATE TABLE redeliveries (
  guid TEXT PRIMARY KEY,
  requested_ms BIGINT NOT NULL,
  attempts BIGINT NOT NULL
);
)";
  return out;
}

int user_version(SqlTx& tx) {
  int version = 0;
  tx.each("PRAGMA user_version", {},
          [&](const SqlRow& r) { version = static_cast<int>(r.i64(0)); });
  return version;
}

SchemaHistory history(SqlDialect d) {
  // The dialects differ in the auto-increment key type, one column type change and JSON access.
  SchemaHistory h{"relay store", {v1(d), v2(d), v3(), v4(), v5(d), v6(), v7(), v8(d)}, nullptr};
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
