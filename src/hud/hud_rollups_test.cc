// The rollups against the job rows they summarize: every aggregate the HUD reads, computed from
// the rollups by the store and by a plain scan of the job rows here, on a seeded store of 50,000
// jobs with re-runs, timeouts, callbacks that move jobs on, and jobs the sweeper timed out. Then
// retention: pruning leaves the 30- and 90-day pages as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/metrics.h"
#include "base/yaml_doc.h"
#include "hud/hud_api.h"
#include "hud_seed/seed.h"
#include "relay/config.h"
#include "relay/sweeper.h"
#include "relay/task_runner.h"
#include "relay_store/hud_rollup.h"
#include "sql/sql_db.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

constexpr int64_t kDay = 86400000;
constexpr int64_t kHour = 3600000;
// Not on an hour: every window starts inside an hour.
constexpr int64_t kNow = 1800000000000 + 17 * 60000 + 4321;

// The job rows behind a store URI, read directly.
std::unique_ptr<SqlDb> raw_db(const std::string& uri) {
  return uri.rfind("sqlite:", 0) == 0 ? open_sqlite_db(uri.substr(7), 5000)
                                      : open_postgres_db(uri, 1, 5000);
}

using StatsRow = std::vector<std::string>;

// repo_stats from the job rows: the query the HUD ran before rollups.
std::vector<StatsRow> scan_repo_stats(SqlDb& db, int64_t since, JobFilter f) {
  return db.read("scan", [&](SqlTx& tx) {
    return tx.all(
        "SELECT repo, MAX(level COLLATE \"C\"), COUNT(*), "
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
        "MIN(created_ms), MAX(created_ms), "
        "MAX(CASE WHEN execution_time_ms >= 0 THEN execution_time_ms ELSE -1 END), "
        "SUM(CASE WHEN conclusion = 'failure' AND verdict_category = 'upstream' AND "
        "verdict_confidence = 'high' THEN 1 ELSE 0 END) FROM jobs WHERE created_ms >= ? AND "
        "superseded = 0 AND event_type IN " +
            event_types_sql(f) + " GROUP BY repo ORDER BY repo COLLATE \"C\"",
        {since}, [](const SqlRow& r) {
          StatsRow out{r.text(0), r.text(1)};
          for (int i = 2; i < 18; ++i) out.push_back(std::to_string(r.i64(i)));
          return out;
        });
  });
}

std::vector<StatsRow> store_repo_stats(Store& store, int64_t since, JobFilter f) {
  std::vector<StatsRow> out;
  for (const RepoStats& s : store.jobs.repo_stats(since, f)) {
    StatsRow row{s.repo, s.level};
    for (int64_t v : {s.jobs, s.success, s.failure, s.timed_out, s.cancelled, s.in_progress, s.prs,
                      s.queue_sum_ms, s.queue_n, s.exec_sum_ms, s.exec_n, s.overruns, s.first_ms,
                      s.last_ms, s.exec_max_ms, s.failure_upstream})
      row.push_back(std::to_string(v));
    out.push_back(row);
  }
  return out;
}

using DayRow = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;

std::vector<DayRow> scan_daily(SqlDb& db, int64_t since, JobFilter f) {
  return db.read("scan", [&](SqlTx& tx) {
    return tx.all(
        "SELECT repo, created_ms / 86400000, COUNT(*), "
        "SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN conclusion = 'failure' THEN 1 ELSE 0 END) FROM jobs WHERE created_ms >= ? "
        "AND superseded = 0 AND event_type IN " +
            event_types_sql(f) + " GROUP BY 1, 2 ORDER BY repo COLLATE \"C\", 2",
        {since}, [](const SqlRow& r) {
          return DayRow{r.text(0), r.i64(1), r.i64(2), r.i64(3), r.i64(4)};
        });
  });
}

std::vector<DayRow> store_daily(Store& store, int64_t since, JobFilter f) {
  std::vector<DayRow> out;
  for (const DailyStats& d : store.jobs.daily_stats(since, f))
    out.emplace_back(d.repo, d.day, d.jobs, d.success, d.failure);
  return out;
}

std::vector<int64_t> scan_e2e(SqlDb& db, const std::string& repo, int64_t since) {
  auto v = db.read("scan", [&](SqlTx& tx) {
    return tx.all(
        "SELECT queue_time_ms + execution_time_ms FROM jobs WHERE repo = ? AND created_ms >= ? "
        "AND queue_time_ms >= 0 AND execution_time_ms >= 0",
        {repo, since}, [](const SqlRow& r) { return r.i64(0); });
  });
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> scan_prs(SqlDb& db, const std::string& repo, int64_t since) {
  return db.read("scan", [&](SqlTx& tx) {
    return tx.all(
        "SELECT pr_number FROM jobs WHERE repo = ? AND created_ms >= ? AND pr_number > 0 AND "
        "event_type IN " +
            event_types_sql(JobFilter::kPullRequest) +
            " GROUP BY pr_number ORDER BY MAX(created_ms) DESC, pr_number DESC",
        {repo, since}, [](const SqlRow& r) { return r.i64(0); });
  });
}

int64_t count_jobs(SqlDb& db, int64_t before) {
  return db
      .read("scan",
            [&](SqlTx& tx) {
              return tx.first("SELECT COUNT(*) FROM jobs WHERE created_ms < ?", {before},
                              [](const SqlRow& r) { return r.i64(0); });
            })
      .value_or(-1);
}

// Jobs the way callbacks and the sweeper make them: in_progress first, then moved on.
void add_callback_jobs(Store& store, RelayConfig& config) {
  for (int i = 0; i < 60; ++i) {
    JobRecord j;
    j.key = "live-" + std::to_string(i);
    j.delivery_id = j.key;
    j.repo = i % 3 ? "seed-org/backend-2" : "seed-org/backend-3";
    j.run_id = std::to_string(900000 + i);
    j.job_name = "test";
    j.workflow_name = "CI";
    j.event_type = i % 10 == 0 ? "periodic" : "pull_request";
    j.pr_number = j.event_type == "pull_request" ? 95000 + i % 7 : 0;
    j.level = "L2";
    j.status = JobStatus::kInProgress;
    j.dispatched_ms = kNow - (8 + i % 5) * kHour - 60000 * i;
    j.queue_time_ms = 60000 * (i % 11);
    j.in_progress_ms = j.created_ms = j.dispatched_ms + j.queue_time_ms;
    ASSERT_TRUE(store.jobs.insert_job(j, {}));
    if (i % 2) {  // a completed callback; the rest stay in progress for the sweeper
      j.status = JobStatus::kCompleted;
      j.conclusion = i % 4 == 1 ? JobConclusion::kSuccess : JobConclusion::kFailure;
      j.completed_ms = j.in_progress_ms + 3 * kHour + 1000 * i;
      j.execution_time_ms = j.completed_ms - j.in_progress_ms;
      j.level = "L3";  // the repo moved up between its callbacks
      ASSERT_TRUE(store.jobs.update_job(j, JobStatus::kInProgress, {}));
    }
  }
  Metrics metrics;
  config.sweeper.zombie_timeout_s = 6 * 3600;
  TaskRunner tasks(store.tasks, nullptr, config, metrics);
  Sweeper sweeper(store, config, tasks, metrics);
  EXPECT_GT(sweeper.sweep_once(kNow), 10);  // the older half of the unfinished ones
}

class HudRollups : public ::testing::TestWithParam<std::string> {};

TEST_P(HudRollups, EqualTheRowScanOnASeededStore) {
  std::string uri = fresh_store_uri(GetParam());
  auto store = open_store(uri);
  SeedOptions o;
  o.deliveries = 4100;  // about 50,000 jobs
  o.now_ms = kNow;
  SeedResult seeded = seed_store(*store, o);
  ASSERT_GT(seeded.jobs, 48000);
  ASSERT_GT(seeded.superseded_attempts, 2);  // nightly re-runs: the later attempt counts
  RelayConfig config;
  add_callback_jobs(*store, config);
  auto db = raw_db(uri);

  int64_t last_day = kNow / kDay;
  for (int64_t since : {kNow - kDay, kNow - 7 * kDay, kNow - 14 * kDay, kNow - 30 * kDay,
                        int64_t{0}, kNow - 5 * kDay - 12345, (last_day - 89) * kDay}) {
    SCOPED_TRACE(since);
    for (JobFilter f : {JobFilter::kPullRequest, JobFilter::kNightly}) {
      auto want = scan_repo_stats(*db, since, f);
      ASSERT_FALSE(want.empty());
      EXPECT_EQ(store_repo_stats(*store, since, f), want);
      EXPECT_EQ(store_daily(*store, since, f), scan_daily(*db, since, f));
    }
    for (int b = 1; b <= 4; ++b) {
      std::string repo = "seed-org/backend-" + std::to_string(b);
      SCOPED_TRACE(repo);
      // The histogram holds every value to the tenth of a minute, so a percentile read from it
      // is the exact percentile rounded as the HUD shows it.
      std::vector<int64_t> values = scan_e2e(*db, repo, since);
      ASSERT_FALSE(values.empty());
      auto histogram = store->jobs.e2e_histogram(repo, since);
      int64_t n = 0;
      for (const auto& bucket : histogram) n += bucket.jobs;
      EXPECT_EQ(n, static_cast<int64_t>(values.size()));
      for (double p : {0.5, 0.95, 0.99, 0.0, 1.0}) {
        size_t at = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p * values.size()))) - 1;
        EXPECT_EQ(percentile_ms(histogram, p), e2e_bucket(values[at]) * kE2eBucketMs) << p;
      }
      int64_t total = -1;
      std::vector<int64_t> prs = scan_prs(*db, repo, since);
      EXPECT_EQ(store->jobs.repo_prs(repo, since, -1, 0, &total), prs);
      EXPECT_EQ(total, static_cast<int64_t>(prs.size()));
    }
  }
}

// The pages a retention cut must not change, without where detail begins.
nlohmann::json pages(Store& store, const Allowlist& allow) {
  nlohmann::json out;
  for (std::string tab : {"pr", "nightly"}) {
    HudQuery q;
    q.now_ms = kNow;
    q.tab = tab;
    q.range = "30d";
    out["summary"][tab] = summary_json(store, allow, q, {});
    for (int days : {30, 90}) {
      q.days = days;
      out["metrics"][tab][std::to_string(days)] = metrics_json(store, q);
    }
    for (int b = 1; b <= 4; ++b) {
      std::string repo = "seed-org/backend-" + std::to_string(b);
      out["repo"][tab][repo] = repo_json(store, allow, repo, q);
    }
  }
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& j) {
    if (!j.is_object()) return;
    j.erase("detail_since_ms");
    for (auto& [k, v] : j.items()) strip(v);
  };
  strip(out);
  return out;
}

TEST_P(HudRollups, PruningLeavesThe30And90DayFiguresUnchanged) {
  std::string uri = fresh_store_uri(GetParam());
  auto store = open_store(uri);
  SeedOptions o;
  o.deliveries = 1600;
  o.days = 150;
  o.now_ms = kNow;
  SeedResult seeded = seed_store(*store, o);
  Allowlist allow = Allowlist::parse(load_yaml_text("allow.yml", seeded.allowlist_yaml));
  auto db = raw_db(uri);
  int64_t cutoff = kNow - 90 * kDay;
  ASSERT_GT(count_jobs(*db, cutoff), 5000);
  nlohmann::json before = pages(*store, allow);

  RelayConfig config;  // job_retention_days: 90 by default
  Metrics metrics;
  TaskRunner tasks(store->tasks, nullptr, config, metrics);
  Sweeper sweeper(*store, config, tasks, metrics);
  EXPECT_GT(sweeper.prune_once(kNow), 5000);
  EXPECT_EQ(count_jobs(*db, cutoff), 0);
  EXPECT_EQ(store->jobs.detail_since(), cutoff);
  EXPECT_EQ(sweeper.prune_once(kNow), 0);

  nlohmann::json after = pages(*store, allow);
  // As a patch, so a failure shows only what changed.
  EXPECT_EQ(nlohmann::json::diff(before, after).dump(1), "[]");
  // The pages say where detail begins.
  HudQuery q;
  q.now_ms = kNow;
  EXPECT_EQ(summary_json(*store, allow, q, {})["detail_since_ms"], cutoff);
}

INSTANTIATE_TEST_SUITE_P(Backends, HudRollups, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
