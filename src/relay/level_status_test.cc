// /api/crcr/level-status's numbers against a direct computation over the job rows, on both stores,
// with jobs on either side of each window's first millisecond.
#include "relay/level_status.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/yaml_doc.h"
#include "relay_store/hud_rollup.h"
#include "sql/sql_db.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

constexpr int64_t kDay = 86400000;
constexpr int64_t kMin = 60000;
// Not on an hour or a day: every window starts inside an hour.
constexpr int64_t kNow = 1800000000000 + 17 * kMin + 4321;

TEST(LevelCriterion, MetAndMeasuredAsUpstreamShowsThem) {
  LevelCriterion below{
      "e2eTimeS", "End-to-End Time (P50)", "< 3 h", MeasureKind::kDuration, 10800, false, 10799.0};
  EXPECT_EQ(below.met(), true);
  below.measured = 10800;
  EXPECT_EQ(below.met(), false);  // "below" is strict
  EXPECT_EQ(below.measured_text(), "3h 0m");
  below.measured = std::nullopt;
  EXPECT_EQ(below.met(), std::nullopt);
  EXPECT_EQ(below.measured_text(), "–");
  below.measured = NAN;
  EXPECT_EQ(below.met(), std::nullopt);
  LevelCriterion pass{"passRate", "Job Pass Rate", "≥ 90%", MeasureKind::kRatio, 0.9, true, 0.9};
  EXPECT_EQ(pass.met(), true);  // "at least" includes the target
  EXPECT_EQ(pass.measured_text(), "90.0%");
  LevelCriterion days{
      "tenureAtL2Days", "Time at L2", "≥ 1 month", MeasureKind::kDays, 30, true, 29.6};
  EXPECT_EQ(days.measured_text(), "30 days");
  EXPECT_EQ(days.met(), false);
  EXPECT_EQ(duration_display(45), "45s");
  EXPECT_EQ(duration_display(725), "12m 5s");
  EXPECT_EQ(duration_display(7500), "2h 5m");
  EXPECT_EQ(duration_display(3 * 86400 + 4 * 3600 + 59), "3d 4h");
}

TEST(LevelStatus, ChangeIsPromoteWhenAllMetDemoteWhenOneFailsAndNothingWithoutJobs) {
  LevelStatus s;
  s.promotion = true;
  s.criteria = {{"a", "A", "", MeasureKind::kRatio, 0.5, true, 0.6},
                {"b", "B", "", MeasureKind::kRatio, 0.5, false, std::nullopt}};
  EXPECT_EQ(s.change(), "");  // one criterion has no data
  s.criteria[1].measured = 0.1;
  EXPECT_EQ(s.change(), "promote");
  s.promotion = false;
  EXPECT_EQ(s.change(), "");
  s.criteria[1].measured = 0.9;
  EXPECT_EQ(s.change(), "demote");
  s.no_data = true;  // silence is listed but never opens a PR
  EXPECT_EQ(s.change(), "");
}

class LevelStatusOnStore : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uri_ = fresh_store_uri(GetParam());
    store_ = open_store(uri_);
  }
  // A job of `repo` created at `at`, with its queue and execution times.
  void job(const std::string& repo, int64_t at, const std::string& conclusion, int64_t queue_ms,
           int64_t exec_ms, const std::string& event = "pull_request",
           const std::string& verdict = "") {
    JobRecord j;
    j.key = fmt::format("{}:{}:{}", repo, at, n_++);
    j.delivery_id = j.key;
    j.repo = repo;
    j.run_id = std::to_string(n_);
    j.job_name = "test";
    j.workflow_name = "CI";
    j.event_type = event;
    j.pr_number = event == "pull_request" ? 100 + n_ % 7 : 0;
    j.level = "L3";
    j.status = conclusion.empty() ? JobStatus::kInProgress : JobStatus::kCompleted;
    j.conclusion = JobConclusion::parse(conclusion);
    j.queue_time_ms = queue_ms;
    j.in_progress_ms = at;
    j.execution_time_ms = exec_ms;
    j.created_ms = at;
    if (!verdict.empty()) j.verdict_category = verdict, j.verdict_confidence = "high";
    ASSERT_TRUE(store_->jobs.insert_job(j, {}));
  }

  // The window's figures by a plain scan of the job rows.
  struct Scan {
    int64_t jobs = 0, completed = 0, success = 0, timed_out = 0, upstream = 0;
    int64_t queue_sum = 0, queue_n = 0, exec_max = -1;
    std::vector<int64_t> e2e;
  };
  Scan scan(const std::string& repo, int64_t since) {
    auto db = uri_.rfind("sqlite:", 0) == 0 ? open_sqlite_db(uri_.substr(7), 5000)
                                            : open_postgres_db(uri_, 1, 5000);
    Scan s;
    db->read("scan", [&](SqlTx& tx) {
      tx.each(
          "SELECT status, conclusion, queue_time_ms, execution_time_ms, verdict_category FROM "
          "jobs WHERE repo = ? AND created_ms >= ? AND event_type IN ('pull_request', 'push')",
          {repo, since}, [&](const SqlRow& r) {
            s.jobs++;
            bool done = r.text(0) == "completed";
            s.completed += done;
            s.success += r.text(1) == "success";
            s.timed_out += r.text(1) == "timed_out";
            s.upstream += r.text(1) == "failure" && r.text(4) == "upstream";
            if (r.i64(2) >= 0) s.queue_sum += r.i64(2), s.queue_n++;
            s.exec_max = std::max(s.exec_max, r.i64(3));
            if (r.i64(2) >= 0 && r.i64(3) >= 0) s.e2e.push_back(r.i64(2) + r.i64(3));
          });
    });
    std::sort(s.e2e.begin(), s.e2e.end());
    return s;
  }
  std::string uri_;
  std::unique_ptr<Store> store_;
  int n_ = 0;
};

TEST_P(LevelStatusOnStore, NumbersEqualTheJobRowsAtTheWindowEdges) {
  const std::string repo = "acme/edge";
  store_->levels.record_level(repo, "L2", kNow - 40 * kDay);
  store_->levels.record_level(repo, "L3", kNow - 20 * kDay);
  for (int days : {7, 14}) {
    int64_t edge = kNow - days * kDay;
    // On the first millisecond of the window: counted. One before it: not, however long.
    job(repo, edge, "success", 10 * kMin, 170 * kMin);
    job(repo, edge - 1, "timed_out", 50 * kMin, 600 * kMin);
    job(repo, edge + 1, "failure", 40 * kMin, 20 * kMin, "pull_request", "upstream");
    job(repo, edge - 1, "failure", 40 * kMin, 20 * kMin, "pull_request", "upstream");
  }
  for (int i = 0; i < 40; ++i)
    job(repo, kNow - (i * 97 % (6 * 24 * 60)) * kMin - 7, i % 9 ? "success" : "timed_out",
        (i % 13) * kMin, (30 + i * 11 % 200) * kMin, i % 5 ? "pull_request" : "push",
        i % 4 == 1 ? "upstream" : "");
  job(repo, kNow - 2 * kMin, "", 3 * kMin, -1);              // still running
  job(repo, kNow - 3 * kMin, "failure", -1, -1, "nightly");  // another tab: not counted

  LevelThresholds t;
  for (bool promotion : {true, false}) {
    SCOPED_TRACE(promotion);
    LevelStatus s = promotion ? promotion_status(*store_, repo, kNow, t)
                              : demotion_status(*store_, repo, kNow, t);
    Scan want = scan(repo, kNow - (promotion ? 14 : 7) * kDay);
    EXPECT_EQ(s.window_days, promotion ? 14 : 7);
    EXPECT_FALSE(s.no_data);
    auto measured = [&](const std::string& key) {
      for (const auto& c : s.criteria)
        if (c.key == key) return c.measured;
      ADD_FAILURE() << key;
      return std::optional<double>();
    };
    size_t at = std::max<int64_t>(1, std::ceil(0.5 * want.e2e.size())) - 1;
    EXPECT_DOUBLE_EQ(*measured("e2eTimeS"), e2e_bucket(want.e2e[at]) * kE2eBucketMs / 1000.0);
    EXPECT_DOUBLE_EQ(*measured("timeoutRate"), double(want.timed_out) / want.completed);
    EXPECT_DOUBLE_EQ(*measured("passRate"), double(want.success) / want.completed);
    if (promotion) {
      EXPECT_DOUBLE_EQ(*measured("maxExecTimeS"), want.exec_max / 1000.0);
      EXPECT_DOUBLE_EQ(*measured("avgQueueTimeS"), double(want.queue_sum) / want.queue_n / 1000);
      EXPECT_DOUBLE_EQ(*measured("tenureAtL2Days"), 40.0);
      ASSERT_EQ(s.criteria.size(), 6u);
    } else {
      ASSERT_EQ(s.criteria.size(), 3u);
    }
    // The operator's choice: without the failures a confident verdict blames on upstream.
    LevelThresholds excl = t;
    excl.pass_rate_excludes_upstream = true;
    LevelStatus e = promotion ? promotion_status(*store_, repo, kNow, excl)
                              : demotion_status(*store_, repo, kNow, excl);
    EXPECT_GT(want.upstream, 0);
    EXPECT_DOUBLE_EQ(*e.criteria.back().measured,
                     double(want.success) / (want.completed - want.upstream));
    EXPECT_EQ(e.criteria.back().label, "Job Pass Rate (upstream-caused failures excluded)");
  }
}

TEST_P(LevelStatusOnStore, TheAllowlistsL2AndL3ReposInCrcrsShape) {
  Allowlist allow = Allowlist::parse(load_yaml_text(
      "a.yml",
      "L1: [acme/one]\nL2: [acme/two]\nL3:\n  dev:\n    acme/three: [ann]\nL4: [acme/four]\n"));
  store_->levels.record_level("acme/two", "L2", kNow - 45 * kDay);
  for (int i = 0; i < 20; ++i) {
    job("acme/two", kNow - i * 3600000 - 5, "success", 5 * kMin, 60 * kMin);
    job("acme/three", kNow - i * 3600000 - 5, i % 4 ? "success" : "failure", 5 * kMin, 200 * kMin);
  }
  store_->levels.set_demotion({"acme/three", kNow - 3600000, 42, "https://github.com/p/p/pull/42"});
  auto json = level_status_json(level_statuses(*store_, allow, kNow, LevelThresholds{}));
  ASSERT_EQ(json["repos"].size(), 2u);
  const auto& promote = json["repos"][1];
  EXPECT_EQ(promote["repo"], "acme/two");
  EXPECT_EQ(promote["level"], "L2");
  EXPECT_EQ(promote["change"], "promote");
  EXPECT_EQ(promote["windowDays"], 14);
  EXPECT_EQ(promote["noData"], false);
  EXPECT_EQ(promote["criteria"][0], (nlohmann::json{{"criterion", "Time at L2"},
                                                    {"measured", "45 days"},
                                                    {"target", "≥ 1 month"},
                                                    {"met", true}}));
  EXPECT_EQ(promote["criteria"][1]["measured"], "1h 5m");
  EXPECT_EQ(promote["criteria"][5]["measured"], "100.0%");
  EXPECT_TRUE(promote["demotionPr"].is_null());
  const auto& demote = json["repos"][0];
  EXPECT_EQ(demote["repo"], "acme/three");
  EXPECT_EQ(demote["change"], "demote");
  EXPECT_EQ(demote["windowDays"], 7);
  EXPECT_EQ(demote["criteria"][0]["criterion"], "End-to-End Time (P50)");
  EXPECT_EQ(demote["criteria"][0]["met"], false);  // 3 h 25 min
  EXPECT_EQ(demote["criteria"][2], (nlohmann::json{{"criterion", "Job Pass Rate"},
                                                   {"measured", "75.0%"},
                                                   {"target", "≥ 90%"},
                                                   {"met", false}}));
  EXPECT_EQ(demote["demotionPr"]["number"], 42);
  // Silence: listed with no data, no change.
  auto silent = demotion_status(*store_, "acme/quiet", kNow, LevelThresholds{});
  EXPECT_TRUE(silent.no_data);
  auto silent_json = level_status_json(silent);
  EXPECT_TRUE(silent_json["change"].is_null());
  EXPECT_TRUE(silent_json["criteria"][0]["met"].is_null());
  EXPECT_EQ(silent_json["criteria"][0]["measured"], "–");
}

INSTANTIATE_TEST_SUITE_P(Stores, LevelStatusOnStore, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
