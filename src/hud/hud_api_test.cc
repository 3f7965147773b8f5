#include "hud/hud_api.h"

#include <gtest/gtest.h>

#include "base/text.h"
#include "hud/html.h"
#include "hud/svg_chart.h"
#include "hud_seed/seed.h"
#include "relay_store/hud_rollup.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

TEST(Html, EscapesEverythingADownstreamCouldSend) {
  EXPECT_EQ(esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(safe_href("javascript:alert(1)"), "#");
  EXPECT_EQ(safe_href("https://github.com/a/b?x=\"1\""), "https://github.com/a/b?x=&quot;1&quot;");
  EXPECT_EQ(url_encode("d:a/b:1:1:<j>"), "d%3Aa%2Fb%3A1%3A1%3A%3Cj%3E");
}

TEST(HudApi, PassRateChipThresholds) {
  EXPECT_EQ(pass_rate_chip(95.0), "green");
  EXPECT_EQ(pass_rate_chip(94.9), "yellow");
  EXPECT_EQ(pass_rate_chip(80.0), "yellow");
  EXPECT_EQ(pass_rate_chip(79.9), "red");
  EXPECT_EQ(pass_rate_chip(nullptr), "grey");
}

TEST(HudApi, QueryValidation) {
  auto parse = [](std::map<std::string, std::string> params) {
    HudQuery q;
    return parse_hud_query([&](const std::string& k) { return params.count(k) ? params[k] : ""; },
                           &q);
  };
  EXPECT_EQ(parse({{"range", "30d"}, {"tab", "nightly"}, {"page", "3"}}), "");
  EXPECT_EQ(parse({{"range", "1y"}}), "range must be 24h, 7d or 30d");
  EXPECT_EQ(parse({{"tab", "x"}}), "tab must be pr or nightly");
  EXPECT_EQ(parse({{"page", "0"}}), "page must be an integer from 1 to 1000000");
  EXPECT_EQ(parse({{"per_page", "5x"}}), "per_page must be an integer from 1 to 100");
  EXPECT_EQ(parse({{"days", "3"}}), "days must be 7, 14, 30 or 90");
}

class HudOnSeededStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = open_test_store("sqlite");
    SeedOptions o;
    o.deliveries = 300;
    o.now_ms = now_;
    seeded_ = seed_store(*store_, o);
    allow_ = Allowlist::parse(load_yaml_text("allow.yml", seeded_.allowlist_yaml));
  }
  int64_t now_ = 1800000000000;
  std::unique_ptr<Store> store_;
  SeedResult seeded_;
  Allowlist allow_;
};

TEST_F(HudOnSeededStore, SummaryPutsBackendsUnderTheirLevelsWithConsistentNumbers) {
  HudQuery q;
  q.range = "30d";
  q.now_ms = now_;
  auto s = summary_json(*store_, allow_, q, {{"outbox_pending", 0}});
  ASSERT_EQ(s["sections"].size(), 4u);
  EXPECT_EQ(s["sections"][0]["level"], "L4");
  EXPECT_EQ(s["sections"][0]["backends"][0]["repo"], "seed-org/backend-1");
  int64_t jobs = 0;
  for (const auto& sec : s["sections"])
    for (const auto& b : sec["backends"]) {
      jobs += b["jobs"].get<int64_t>();
      if (b["pass_rate"].is_number()) {
        double expect = 100.0 * b["success"].get<int64_t>() /
                        (b["jobs"].get<int64_t>() - b["in_progress"].get<int64_t>());
        EXPECT_NEAR(b["pass_rate"].get<double>(), expect, 0.05);
        EXPECT_EQ(b["chip"], pass_rate_chip(b["pass_rate"]));
      }
    }
  HudQuery nightly = q;
  nightly.tab = "nightly";
  int64_t nightly_jobs = 0;
  auto nightly_doc = summary_json(*store_, allow_, nightly, {});
  for (const auto& sec : nightly_doc["sections"])
    for (const auto& b : sec["backends"]) nightly_jobs += b["jobs"].get<int64_t>();
  EXPECT_EQ(jobs + nightly_jobs, seeded_.jobs - seeded_.superseded_attempts);
  EXPECT_EQ(nightly_jobs, 30 * 4);  // one nightly per day per reporting backend
}

TEST_F(HudOnSeededStore, RepoPagesPartitionThePrsAndReadinessIsComputed) {
  HudQuery q;
  q.range = "30d";
  q.now_ms = now_;
  q.per_page = 7;
  auto first = repo_json(*store_, allow_, "seed-org/backend-3", q);
  int64_t total = first["matrix"]["total_prs"];
  EXPECT_EQ(first["matrix"]["pages"], (total + 6) / 7);
  std::set<int64_t> seen;
  for (int page = 1; page <= first["matrix"]["pages"].get<int>(); ++page) {
    q.page = page;
    auto doc = repo_json(*store_, allow_, "seed-org/backend-3", q);  // keep it alive for the loop
    for (const auto& row : doc["matrix"]["rows"])
      EXPECT_TRUE(seen.insert(row["pr"].get<int64_t>()).second);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), total);
  EXPECT_EQ(first["stats"]["prs"], total);
  // Below L3 the panel holds the level status's promotion criteria, upstream's thresholds.
  const auto& criteria = first["readiness"]["criteria"];
  ASSERT_EQ(criteria.size(), 6u);
  std::vector<std::string> names;
  for (const auto& c : criteria) names.push_back(c["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"Time at L2", "End-to-End Time (P50)", "Max Execution Time",
                                      "Avg Queue Time", "Timeout Rate", "Job Pass Rate"}));
  EXPECT_EQ(criteria[0]["pass"], true);  // seeded at L2 for 90 days
  EXPECT_EQ(criteria[0]["display"], "90 days");
  EXPECT_EQ(criteria[0]["target"], "≥ 1 month");
  EXPECT_EQ(criteria[2]["pass"], false);  // seeded timeouts ran 6 h
  EXPECT_EQ(criteria[5]["pass"], false);  // backend-3 succeeds about 85 % of the time
  EXPECT_EQ(first["readiness"]["ready"], false);
  // The same numbers as its level status.
  EXPECT_EQ(first["level_status"]["level"], "L2");
  for (size_t i = 0; i < criteria.size(); ++i)
    EXPECT_EQ(first["level_status"]["criteria"][i]["measured"], criteria[i]["display"]) << i;
  EXPECT_TRUE(job_json(*store_, "no-such-key").is_null());
}

TEST_F(HudOnSeededStore, AnL3RepoIsMeasuredAgainstTheL4CriteriaTheOperatorSet) {
  HudQuery q;
  q.range = "30d";
  q.now_ms = now_;
  // backend-2 is at L3 since 40 days; upstream defines no L4 criteria.
  auto none = repo_json(*store_, allow_, "seed-org/backend-2", q)["readiness"];
  EXPECT_EQ(none["target"], "L4");
  EXPECT_TRUE(none["criteria"].empty());
  EXPECT_EQ(none["ready"], false);
  EXPECT_NE(none["note"].get<std::string>().find("No L4 criteria are defined"), std::string::npos);

  L4Criteria l4;
  l4.at_l3_days = 30;
  l4.pass_rate_percent = 90;
  l4.timeout_rate_percent = 0.5;
  auto set =
      repo_json(*store_, allow_, "seed-org/backend-2", q, HudSettings{l4, {}, 36})["readiness"];
  ASSERT_EQ(set["criteria"].size(), 3u);
  EXPECT_EQ(set["criteria"][0]["name"], "At L3");
  EXPECT_EQ(set["criteria"][0]["display"], "40.0 days");
  EXPECT_EQ(set["criteria"][0]["pass"], true);
  EXPECT_EQ(set["criteria"][1]["target"], ">= 90%");
  double pass = set["criteria"][1]["value"];
  EXPECT_GT(pass, 90);  // the seeded L3 backend succeeds about 96% of the time
  EXPECT_EQ(set["criteria"][1]["pass"], true);
  EXPECT_EQ(set["criteria"][2]["target"], "< 0.5%");
  EXPECT_EQ(set["criteria"][2]["pass"], set["criteria"][2]["value"].get<double>() < 0.5);
  EXPECT_EQ(set["ready"], set["criteria"][2]["pass"]);
  EXPECT_EQ(set["note"], "");
  // A stricter pass rate fails, with its number.
  l4.pass_rate_percent = 99.9;
  auto strict =
      repo_json(*store_, allow_, "seed-org/backend-2", q, HudSettings{l4, {}, 36})["readiness"];
  EXPECT_EQ(strict["criteria"][1]["pass"], false);
  EXPECT_EQ(strict["ready"], false);

  // L4 is the top; L2 keeps the L3 criteria.
  auto top =
      repo_json(*store_, allow_, "seed-org/backend-1", q, HudSettings{l4, {}, 36})["readiness"];
  EXPECT_TRUE(top["target"].is_null());
  EXPECT_TRUE(top["criteria"].empty());
  EXPECT_EQ(repo_json(*store_, allow_, "seed-org/backend-3", q,
                      HudSettings{l4, {}, 36})["readiness"]["target"],
            "L3");
}

TEST(HudApi, PercentileOfAHistogramIsTheSortedElement) {
  std::vector<E2eBucket> h = {{10, 2}, {20, 1}, {30, 1}};  // 1.0, 1.0, 2.0, 3.0 min
  EXPECT_EQ(percentile_ms(h, 0.5), 60000);
  EXPECT_EQ(percentile_ms(h, 0.51), 120000);
  EXPECT_EQ(percentile_ms(h, 0.95), 180000);
  EXPECT_EQ(percentile_ms(h, 0), 60000);
  EXPECT_EQ(percentile_ms({}, 0.5), -1);
}

TEST(SvgChart, DrawsOneLinePerSeriesAndEscapesNames) {
  std::string svg =
      svg_line_chart("Runs", {{"a/<b>", {{1, 3}, {2, 5}}}, {"c/d", {{1, 1}}}}, 1, 2, "");
  EXPECT_EQ(std::count(svg.begin(), svg.end(), 'p') > 0, true);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    lines++;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("a/&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("a/<b>"), std::string::npos);
}

}  // namespace
}  // namespace ootci
