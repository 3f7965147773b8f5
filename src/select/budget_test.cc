#include "select/budget.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using Strings = std::set<std::string>;

TEST(Budget, KeepsTheStrongestEvidenceFirstThenPastBreakagesThenTheCheaper) {
  std::vector<BudgetItem> items = {{"weak", Evidence::kUnknown, 9, 1},
                                   {"op-slow", Evidence::kOp, 0, 3},
                                   {"op-fast", Evidence::kOp, 0, 1},
                                   {"op-broke", Evidence::kOp, 2, 3},
                                   {"dtype", Evidence::kOpAndDtype, 0, 2}};
  size_t kept = items_within_budget(items, 6);
  std::vector<std::string> order;
  for (const auto& i : items) order.push_back(i.id);
  EXPECT_EQ(order, (std::vector<std::string>{"dtype", "op-broke", "op-fast", "op-slow", "weak"}));
  EXPECT_EQ(kept, 3u);  // 2 + 3 + 1; op-slow would pass 6
  // A prefix: a cheap weak item is not kept over a stronger one that did not fit.
  EXPECT_EQ(items_within_budget(items, 5.5), 2u);
}

TEST(Budget, ParsesAShareAndRefusesNonsense) {
  EXPECT_DOUBLE_EQ(parse_budget("10%"), 0.10);
  EXPECT_DOUBLE_EQ(parse_budget("2.5"), 0.025);
  for (const char* bad : {"", "%", "0", "-5%", "101%", "ten", "10%%", "10 %"}) {
    try {
      parse_budget(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--budget"), std::string::npos) << e.what();
    }
  }
}

TestResult timed(const std::string& id, const std::string& outcome, double seconds) {
  TestResult t;
  t.test_id = id;
  t.file = id.substr(0, id.find("::"));
  t.name = id.substr(id.rfind("::") + 2);
  t.outcome = *parse_outcome(outcome);
  t.duration_s = seconds;
  return t;
}

// A plan of 20 s: the budget keeps the tests with direct evidence and reports, from history,
// the breakages the dropped tests caught before.
TEST(Budget, CutsASelectionToItsShareAndReportsTheRecallAtRisk) {
  auto store = EvidenceStore::open(make_temp_dir() + "/evidence.db");
  const std::string a = "test/test_a.py::T::";
  int64_t at = 1;
  for (const char* outcome : {"passed", "failed", "passed"}) {
    RunInfo run;
    run.id = fmt::format("r-{}", at);
    run.backend = "ref";
    run.status = RunStatus::kRunning;
    run.started_ms = at;
    store->begin_run(run);
    std::vector<TestResult> results = {
        timed(a + "dtype", "passed", 1), timed(a + "op", "passed", 1),
        timed(a + "flaky_op", outcome, 1), timed(a + "unknown", "passed", 1),
        timed(a + "rest", "passed", 16)};
    for (auto& r : results) r.finished_ms = at;
    store->record_batch(run.id, results);
    store->finish_run(run.id, at + 1, RunStatus::kFinished, Conclusion::kSuccess, {});
    ++at;
  }
  ChangedSelection s;
  s.summary = {{"full_plan", nlohmann::json::array()}, {"touched_ops", {"aten::add.Tensor"}}};
  s.tests = {a + "dtype", a + "op", a + "flaky_op", a + "unknown"};
  s.evidence = {{a + "dtype", Evidence::kOpAndDtype},
                {a + "op", Evidence::kOp},
                {a + "flaky_op", Evidence::kOp},
                {a + "unknown", Evidence::kUnknown}};
  for (const auto& t : s.tests) s.reasons[t] = {"why"};
  apply_budget(s, {{"test/test_a.py", "/nonexistent"}}, *store, 0.10);  // 2 s of 20
  EXPECT_EQ(s.tests, (Strings{a + "dtype", a + "flaky_op"}));
  EXPECT_EQ(s.dropped, (Strings{a + "op", a + "unknown"}));
  EXPECT_FALSE(s.reasons.count(a + "op"));
  const auto& b = s.summary["budget"];
  EXPECT_DOUBLE_EQ(b["plan_seconds"].get<double>(), 20);
  EXPECT_EQ(b["kept"]["tests"], 2);
  EXPECT_EQ(b["kept"]["breakages"], 1);
  EXPECT_EQ(b["dropped"]["by_evidence"], (nlohmann::json{{"no evidence", 1}, {"op", 1}}));
  EXPECT_DOUBLE_EQ(b["recall_at_risk"].get<double>(), 0);
  std::string text = format_changed_summary(s);
  EXPECT_NE(text.find("budget 10% of 20.0 s of test time: kept 2 tests and 0 files (2.0 s; by "
                      "evidence: 1 op, 1 op and dtype); dropped 2 tests and 0 files (2.0 s; by "
                      "evidence: 1 no evidence, 1 op)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("about 0% of what the selection would catch"), std::string::npos) << text;
}

// Discovery runs variants the plan skips (one ran into its 60 s timeout): the plan's own run
// times the budget, and a selected test it never ran costs nothing.
TEST(Budget, ThePlansNewestRunTimesIt) {
  auto store = EvidenceStore::open(make_temp_dir() + "/evidence.db");
  const std::string a = "test/test_a.py::T::";
  auto run = [&](const std::string& id, const std::string& hash, std::vector<TestResult> results,
                 int64_t at) {
    RunInfo r;
    r.id = id;
    r.backend = "ref";
    r.config_hash = hash;
    r.status = RunStatus::kRunning;
    r.started_ms = at;
    store->begin_run(r);
    for (auto& t : results) t.finished_ms = at;
    store->record_batch(id, results);
    nlohmann::json file = {{"relpath", "test/test_a.py"}};
    if (id == "selected") file["tests"] = {a + "one"};
    store->finish_run(id, at + 1, RunStatus::kFinished, Conclusion::kSuccess, {{"files", {file}}});
  };
  run("discovery", "h-discovery",
      {timed(a + "one", "passed", 1), timed(a + "two", "passed", 1),
       timed(a + "skipped_by_plan", "error", 60)},
      1);
  run("plan", "h-plan", {timed(a + "one", "passed", 2), timed(a + "two", "passed", 2)}, 2);
  // A later `ootci run --select` of the same plan ran one test: not a timing of the plan.
  run("selected", "h-plan", {timed(a + "one", "passed", 9)}, 3);
  ChangedSelection s;
  s.summary = {{"full_plan", nlohmann::json::array()}, {"touched_ops", nlohmann::json::array()}};
  s.tests = {a + "one", a + "two", a + "skipped_by_plan"};
  for (const auto& t : s.tests) s.evidence[t] = Evidence::kOp;
  apply_budget(s, {{"test/test_a.py", "/nonexistent"}}, *store, 0.5, {"ref", "h-plan"});
  const auto& b = s.summary["budget"];
  EXPECT_EQ(b["timed_by"], "plan");
  EXPECT_DOUBLE_EQ(b["plan_seconds"].get<double>(), 4);
  EXPECT_EQ(s.tests, (Strings{a + "one", a + "skipped_by_plan"}));  // 2 s + 0 s of 2 s
  // Without the plan's run, the means over every finished run count the discovery's 60 s
  // (one: 1, 2 and 9 s; two: 1 and 2 s).
  ChangedSelection again;
  again.summary = s.summary;
  again.tests = {a + "one"};
  apply_budget(again, {{"test/test_a.py", "/nonexistent"}}, *store, 0.5, {"ref", "h-other"});
  EXPECT_TRUE(again.summary["budget"]["timed_by"].is_null());
  EXPECT_DOUBLE_EQ(again.summary["budget"]["plan_seconds"].get<double>(), 4 + 1.5 + 60);
}

}  // namespace
}  // namespace ootci
