#include "relay_store/job_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "relay_store/hud_rollup.h"
#include "relay_store/store_sql.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// Rows per INSERT in insert_jobs_bulk: 35 columns each stays far below both dialects'
// parameter limits (SQLite 32,766; PostgreSQL 65,535).
constexpr size_t kBulkRows = 200;

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

// An earlier attempt of a nightly job: what superseding it needs.
const RecordColumns<JobRecord>& attempt_columns() {
  static const RecordColumns<JobRecord> columns =
      job_columns().subset({"key", "run_attempt", "repo", "event_type", "pr_number", "created_ms",
                            "level", "status", "conclusion", "queue_time_ms", "execution_time_ms",
                            "verdict_category", "verdict_confidence", "superseded"});
  ;
  return columns;
}

constexpr const char* kDetailSinceKey = "hud_detail_since";

JobRecord read_job(const SqlRow& r) {
  return job_columns().read(r);
}

}  // namespace

JobStore::JobStore(SqlDb& db) : db_(db), d_(db.dialect()), hour_upsert_sql_(hour_upsert_sql(d_)) {}

std::optional<JobRecord> JobStore::get_job(const std::string& key) {
  return db_.first("get_job",
                   fmt::format("SELECT {} FROM jobs WHERE key = ?", job_columns().names()), {key},
                   read_job);
}

bool JobStore::insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks) {
  return db_.write("insert_job", [&](SqlTx& tx) {
    RollupDeltas deltas;
    if (!insert_one(tx, job, deltas)) return false;
    write_rollups(tx, deltas);
    insert_tasks(tx, tasks);
    return true;
  });
}

bool JobStore::update_job(const JobRecord& job, JobStatus expected_status,
                          const std::vector<TaskItem>& tasks,
                          std::optional<bool> expected_check_run_created) {
  return db_.write("update_job", [&](SqlTx& tx) {
    // Replace the whole row, but only if nobody moved it since it was read. In PostgreSQL the
    // row lock the UPDATE takes makes a concurrent update with the same expectation wait,
    // then match 0 rows.
    // The row as it was, for the rollups: locked (PostgreSQL), so nobody changes it between
    // this read and the update.
    auto old = tx.first(fmt::format("SELECT {} FROM jobs WHERE key = ?{}", rollup_columns().names(),
                                    for_update(d_)),
                        {job.key}, [](const SqlRow& r) { return rollup_columns().read(r); });
    if (!old) return false;
    // Whether a later nightly attempt superseded the job is the store's to say, not the
    // caller's.
    JobRecord j = job;
    j.superseded = old->superseded;
    std::vector<SqlParam> params;
    job_columns().bind(j, params);
    int64_t flag = expected_check_run_created ? int64_t{*expected_check_run_created} : -1;
    params.insert(params.end(), {job.key, to_string(expected_status), flag, flag});
    if (tx.exec(fmt::format("UPDATE jobs SET ({}) = ({}) WHERE key = ? AND status = ? AND "
                            "(? < 0 OR check_run_created = ?)",
                            job_columns().names(), job_columns().placeholders()),
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

std::vector<JobRecord> JobStore::jobs_for_sha(const std::string& head_sha) {
  return db_.all("jobs_for_sha",
                 fmt::format("SELECT {} FROM jobs WHERE head_sha = ? ORDER BY key COLLATE \"C\"",
                             job_columns().names()),
                 {head_sha}, read_job);
}

int64_t JobStore::count_overdue_jobs(int64_t before_ms) {
  return db_
      .first("count_overdue_jobs",
             "SELECT COUNT(*) FROM jobs WHERE status = 'in_progress' AND in_progress_ms < ?",
             {before_ms}, read_i64)
      .value_or(0);
}

std::vector<JobRecord> JobStore::overdue_jobs(int64_t before_ms, int limit) {
  return db_.all("overdue_jobs",
                 fmt::format("SELECT {} FROM jobs WHERE status = 'in_progress' AND "
                             "in_progress_ms < ? ORDER BY in_progress_ms LIMIT ?",
                             job_columns().names()),
                 {before_ms, sql_limit(limit)}, read_job);
}

std::vector<RepoStats> JobStore::repo_stats(int64_t since_ms, JobFilter f,
                                            const std::string& repo) {
  return db_.read("repo_stats", [&](SqlTx& tx) { return stats_since(tx, since_ms, f, repo); });
}

std::vector<DailyStats> JobStore::daily_stats(int64_t since_ms, JobFilter f) {
  int64_t hour = first_whole_hour(since_ms);
  return db_.read("daily_stats", [&](SqlTx& tx) {
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

std::vector<int64_t> JobStore::repo_prs(const std::string& repo, int64_t since_ms, int limit,
                                        int offset, int64_t* total) {
  return db_.read("repo_prs", [&](SqlTx& tx) {
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

std::vector<JobRecord> JobStore::repo_jobs_for_prs(const std::string& repo,
                                                   const std::vector<int64_t>& prs,
                                                   int64_t since_ms) {
  if (prs.empty()) return {};
  std::vector<SqlParam> params{repo};
  params.insert(params.end(), prs.begin(), prs.end());
  params.push_back(since_ms);
  return db_.read("repo_jobs_for_prs", [&](SqlTx& tx) {
    std::vector<JobRecord> out;
    tx.each(fmt::format("SELECT {} FROM jobs WHERE repo = ? AND pr_number IN ({}) AND "
                        "created_ms >= ? ORDER BY "
                        "pr_number DESC, workflow_name COLLATE \"C\", job_name COLLATE \"C\", "
                        "run_attempt",
                        job_columns().names(), placeholder_list(static_cast<int>(prs.size()))),
            params, [&](const SqlRow& r) { out.push_back(read_job(r)); });
    return out;
  });
}

std::vector<JobRecord> JobStore::recent_jobs(const std::string& repo, int64_t since_ms, JobFilter f,
                                             int limit, int offset, int64_t* total) {
  return db_.read("recent_jobs", [&](SqlTx& tx) {
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
          branches.empty() ? "" : " UNION ALL ", job_columns().names());
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

std::vector<E2eBucket> JobStore::e2e_histogram(const std::string& repo, int64_t since_ms) {
  int64_t day = first_whole_day(since_ms);
  return db_.read("e2e_histogram", [&](SqlTx& tx) {
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

int64_t JobStore::prune_jobs(int64_t before_ms, int limit) {
  return db_.write("prune_jobs", [&](SqlTx& tx) {
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

int64_t JobStore::detail_since() {
  auto v = db_.first("detail_since", "SELECT value FROM meta WHERE key = ?", {kDetailSinceKey},
                     [](const SqlRow& r) { return r.text(0); });
  return v ? std::stoll(*v) : 0;
}

std::vector<JobRecord> JobStore::jobs_for_pr(int64_t pr_number) {
  return db_.all("jobs_for_pr",
                 fmt::format("SELECT {} FROM jobs WHERE pr_number = ? ORDER BY repo COLLATE "
                             "\"C\", workflow_name COLLATE \"C\", job_name COLLATE \"C\", "
                             "run_attempt",
                             job_columns().names()),
                 {pr_number}, read_job);
}

void JobStore::insert_jobs_bulk(const std::vector<JobRecord>& all) {
  // Nightly attempts one by one, as insert_job writes them, so they supersede each other.
  std::vector<JobRecord> jobs, attempts;
  for (const JobRecord& j : all)
    (std::string(job_class(j.event_type)) == job_class(JobFilter::kNightly) ? attempts : jobs)
        .push_back(j);
  // Many rows per INSERT: one statement per row costs a round trip each in PostgreSQL. Within
  // a statement, as across statements, the first row of a key wins (DO NOTHING skips a row
  // that conflicts with one the same statement inserted).
  db_.write("insert_jobs_bulk", [&](SqlTx& tx) {
    std::set<std::string> inserted;
    std::vector<SqlParam> params;
    for (size_t begin = 0; begin < jobs.size(); begin += kBulkRows) {
      size_t end = std::min(jobs.size(), begin + kBulkRows);
      params.clear();
      std::string values;
      for (size_t i = begin; i < end; ++i) {
        job_columns().bind(jobs[i], params);
        values += (i > begin ? ",(" : "(") + job_columns().placeholders() + ")";
      }
      tx.each(fmt::format("INSERT INTO jobs ({}) VALUES {} ON CONFLICT DO NOTHING RETURNING key",
                          job_columns().names(), values),
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

std::map<std::string, int64_t> JobStore::last_job_ms(JobFilter f) {
  return db_.read("last_job_ms", [&](SqlTx& tx) {
    std::map<std::string, int64_t> out;
    tx.each(
        "SELECT repo, MAX(last_ms) FROM hud_hourly WHERE job_class = ? AND jobs > 0 "
        "GROUP BY repo",
        {job_class(f)}, [&](const SqlRow& r) { out[r.text(0)] = r.i64(1); });
    return out;
  });
}

// Inserts one job with its rollup deltas and PR tracking; false (writing nothing) if the key
// exists. A nightly or periodic attempt supersedes the earlier attempts of its run and job, or
// is itself superseded when a later one is stored already.
bool JobStore::insert_one(SqlTx& tx, const JobRecord& job, RollupDeltas& deltas) {
  JobRecord j = job;
  std::vector<JobRecord> earlier;
  if (std::string(job_class(j.event_type)) == job_class(JobFilter::kNightly)) {
    tx.lock(kAttemptLockKey | stable_hash24(j.repo + "\n" + j.run_id + "\n" + j.job_name));
    auto others =
        tx.all(fmt::format("SELECT {} FROM jobs WHERE repo = ? AND run_id = ? AND "
                           "job_name = ? AND event_type IN {} AND superseded = 0 AND key <> ?{}",
                           attempt_columns().names(), event_types_sql(JobFilter::kNightly),
                           for_update(d_)),
               {j.repo, j.run_id, j.job_name, j.key},
               [](const SqlRow& r) { return attempt_columns().read(r); });
    j.superseded = std::any_of(others.begin(), others.end(),
                               [&](const JobRecord& o) { return o.run_attempt > j.run_attempt; });
    if (!j.superseded) earlier = std::move(others);
  }
  std::vector<SqlParam> params;
  job_columns().bind(j, params);
  if (tx.exec(fmt::format("INSERT INTO jobs ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                          job_columns().names(), job_columns().placeholders()),
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
std::vector<RepoStats> JobStore::stats_since(SqlTx& tx, int64_t since_ms, JobFilter f,
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
void JobStore::track_prs(SqlTx& tx, const std::vector<const JobRecord*>& jobs,
                         RollupDeltas& deltas) {
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
void JobStore::write_rollups(SqlTx& tx, const RollupDeltas& deltas) {
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
      tx.exec("DELETE FROM hud_e2e_daily WHERE repo = ? AND day = ? AND tenth_min = ? AND jobs = 0",
              {repo, day, bucket});
  }
}

}  // namespace ootci
