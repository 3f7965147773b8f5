#include "relay/level_sync.h"

#include <gtest/gtest.h>

#include "relay/demotion.h"

namespace ootci {
namespace {

LevelStatus status(const std::string& repo, bool demote, bool no_data = false) {
  LevelStatus s{repo, "L3", false, no_data, 7, {}, std::nullopt};
  s.criteria = {{"e2eTimeS", "End-to-End Time (P50)", "< 3 h", MeasureKind::kDuration, 10800, false,
                 demote ? 11700.0 : 3600.0},
                {"timeoutRate", "Timeout Rate", "< 1%", MeasureKind::kRatio, 0.01, false, 0.0},
                {"passRate", "Job Pass Rate", "≥ 90%", MeasureKind::kRatio, 0.9, true,
                 demote ? 0.812 : 0.95}};
  if (no_data)
    for (auto& c : s.criteria) c.measured = std::nullopt;
  return s;
}

std::vector<std::string> described(const std::vector<SyncAction>& plan) {
  std::vector<std::string> out;
  for (const auto& a : plan)
    out.push_back((a.kind == SyncAction::kOpen      ? "open "
                   : a.kind == SyncAction::kRefresh ? "refresh "
                                                    : "close ") +
                  a.repo + (a.pr ? " #" + std::to_string(a.pr) : "") +
                  (a.reason.empty() ? "" : ": " + a.reason));
  return out;
}

TEST(LevelSync, PlansAsUpstreamsSyncScriptDoes) {
  std::vector<LevelStatus> statuses = {status("a/missing", true),     status("b/fine", false),
                                       status("c/conflicted", true),  status("d/open", true),
                                       status("e/quiet", true, true), status("f/recovered", false)};
  std::vector<std::string> l3 = {"a/missing", "b/fine",      "c/conflicted", "d/open",
                                 "e/quiet",   "f/recovered", "g/unknown"};
  std::vector<OpenDemotionPr> open = {{"c/conflicted", 3, true},
                                      {"d/open", 4, false},
                                      {"f/recovered", 6, false},
                                      {"g/unknown", 7, false},  // no status: left alone
                                      {"h/merged", 8, false}};  // no longer at L3
  EXPECT_EQ(described(plan_level_sync(statuses, l3, open)),
            (std::vector<std::string>{"close f/recovered #6: is back within its L3 targets",
                                      "close h/merged #8: is no longer at L3 on `main`",
                                      "open a/missing", "refresh c/conflicted #3"}));
  EXPECT_TRUE(plan_level_sync({}, {}, {}).empty());
}

TEST(LevelSync, TheBodyListsTheMissedCriteriaTheOncallsAndWhatClosesIt) {
  RelayConfig c;
  c.sync_levels.hud_url = "https://relay.example";
  c.sync_levels.always_cc = {"atalman"};
  std::string body = demotion_body(status("acme/npu", true), {"@ann", "bob"}, c);
  EXPECT_EQ(body.substr(0, body.find("\n\nThis moves")),
            "Over the last 7 days, [`acme/npu`](https://relay.example/crcr/acme/npu) missed these "
            "L3 targets:\n\n| Criterion | Measured | L3 target |\n| --- | --- | --- |\n"
            "| End-to-End Time (P50) | 3h 15m | < 3 h |\n| Job Pass Rate | 81.2% | ≥ 90% |");
  EXPECT_NE(body.find("This moves it from L3 to L2 in `.github/allowlist.yml`. L2 entries have no "
                      "oncalls or device, so both are dropped.\n\ncc @ann @bob @atalman\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("closes itself once `acme/npu` is back within its L3 targets"),
            std::string::npos);
  EXPECT_NE(body.find("---\nOpened by `ootci relay sync-levels`"), std::string::npos);
  c.sync_levels.always_cc.clear();
  std::string alone = demotion_body(status("acme/npu", true), {}, c);
  EXPECT_NE(alone.find("dropped.\n\nNo oncalls are listed for this repo in the allowlist.\n\n- "),
            std::string::npos)
      << alone;
  EXPECT_EQ(alone.find("cc @"), std::string::npos);
  EXPECT_EQ(demotion_title("acme/npu"), "[CRCR] Demote acme/npu from L3 to L2");
  EXPECT_EQ(demotion_branch("acme/npu"), "crcr-demotion/acme/npu");
}

TEST(Demotion, ChecksRunsAreHeldBackForL3JobsThatStartedDuringIt) {
  Demotion d{"acme/x", 1000, 5, ""};
  EXPECT_FALSE(check_runs_suppressed(Level::kL3, std::nullopt, 2000));
  EXPECT_TRUE(check_runs_suppressed(Level::kL3, d, 1000));
  EXPECT_TRUE(check_runs_suppressed(Level::kL3, d, std::nullopt));  // now: a label, a new job
  EXPECT_FALSE(check_runs_suppressed(Level::kL3, d, 999));          // started before: finished
  EXPECT_FALSE(check_runs_suppressed(Level::kL4, d, 2000));
  EXPECT_FALSE(check_runs_suppressed(Level::kL2, d, 2000));
}

}  // namespace
}  // namespace ootci
