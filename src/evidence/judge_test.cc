#include "evidence/judge.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TestResult r(const std::string& id, const std::string& mode, const std::string& outcome,
             const std::string& error_class = "", bool flaky = false) {
  TestResult t;
  t.test_id = id;
  t.mode = parse_test_mode(mode);
  t.outcome = *parse_outcome(outcome);
  t.error_class = error_class;
  t.flaky = flaky;
  return t;
}

struct Case {
  const char* clause;
  std::vector<TestResult> results;
  std::string conclusion;
  std::vector<std::string> failing;  // test ids, in order
};

TEST(Judge, EachClauseOfTheRule) {
  const TestResult pass = r("a.py::ok", "mandatory_success", "passed");
  for (const Case& c : std::vector<Case>{
           // At least one test ran: an outcome other than skipped.
           {"no results", {}, "failure", {}},
           {"everything skipped",
            {r("a.py::s", "skip", "skipped"), r("a.py::t", "", "skipped")},
            "failure",
            {}},
           {"one pass", {pass}, "success", {}},
           {"an xfailed test ran", {r("a.py::x", "xfail", "xfailed")}, "success", {}},
           {"an error ran", {r("a.py::x", "xfail", "error")}, "success", {}},
           // No mandatory_success (or unknown-mode) variant failed or errored.
           {"mandatory failed",
            {pass, r("a.py::f", "mandatory_success", "failed")},
            "failure",
            {"a.py::f"}},
           {"mandatory error",
            {pass, r("a.py::e", "mandatory_success", "error", "SIGSEGV")},
            "failure",
            {"a.py::e"}},
           {"unknown mode failed", {pass, r("a.py::u", "", "failed")}, "failure", {"a.py::u"}},
           {"unrecognised mode errored",
            {pass, r("a.py::u", "sometimes", "error", "Timeout")},
            "failure",
            {"a.py::u"}},
           {"mandatory xfailed is not a failure",
            {pass, r("a.py::x", "mandatory_success", "xfailed")},
            "success",
            {}},
           {"xfail may fail", {pass, r("a.py::x", "xfail", "failed")}, "success", {}},
           {"xfail may pass",
            {pass, r("a.py::x", "xfail", "xpassed"), r("a.py::y", "xfail", "passed")},
            "success",
            {}},
           {"skip mode failing anyway", {pass, r("a.py::s", "skip", "failed")}, "success", {}},
           // No xfail_strict variant passed.
           {"strict passed",
            {pass, r("a.py::s", "xfail_strict", "passed")},
            "failure",
            {"a.py::s"}},
           {"strict xpassed",
            {pass, r("a.py::s", "xfail_strict", "xpassed")},
            "failure",
            {"a.py::s"}},
           {"strict XPASS(strict) failure",
            {pass, r("a.py::s", "xfail_strict", "failed", "XPASS(strict)")},
            "failure",
            {"a.py::s"}},
           {"strict xfailed", {pass, r("a.py::s", "xfail_strict", "xfailed")}, "success", {}},
           {"strict failing another way",
            {pass, r("a.py::s", "xfail_strict", "failed", "KeyError")},
            "success",
            {}},
           // Flaky passes count as passes.
           {"flaky pass", {r("a.py::f", "mandatory_success", "passed", "", true)}, "success", {}},
           {"every clause at once",
            {r("a.py::m", "mandatory_success", "failed"), r("a.py::s", "xfail_strict", "passed")},
            "failure",
            {"a.py::m", "a.py::s"}},
       }) {
    SCOPED_TRACE(c.clause);
    Verdict v = judge(c.results, nullptr);
    EXPECT_EQ(to_string(v.conclusion), c.conclusion);
    EXPECT_EQ(v.success(), c.conclusion == "success");
    EXPECT_EQ(v.reasons.empty(), v.success());
    std::vector<std::string> failing;
    for (const auto& f : v.failing) failing.push_back(f.test_id);
    EXPECT_EQ(failing, c.failing);
  }
}

TEST(Judge, ReasonsNameEachViolatedClause) {
  EXPECT_EQ(judge({}, nullptr).reasons,
            std::vector<std::string>{"no test ran: there are no results"});
  EXPECT_EQ(judge({r("a.py::s", "skip", "skipped")}, nullptr).reasons,
            std::vector<std::string>{"no test ran: every result is skipped"});
  EXPECT_EQ(judge({r("a.py::m", "", "failed"), r("a.py::n", "mandatory_success", "error"),
                   r("a.py::s", "xfail_strict", "passed")},
                  nullptr)
                .reasons,
            (std::vector<std::string>{
                "2 variants of mode mandatory_success (or unknown) failed or errored",
                "1 variant of mode xfail_strict passed"}));
}

TEST(Judge, CountsPerModeAndOutcome) {
  Verdict v = judge({r("a", "mandatory_success", "passed"), r("b", "mandatory_success", "passed"),
                     r("c", "xfail", "xfailed"), r("d", "", "skipped"), r("e", "xfail", "xfailed")},
                    nullptr);
  using Key = std::pair<std::optional<TestMode>, Outcome>;
  EXPECT_EQ(v.counts, (std::map<Key, int>{{{TestMode::kMandatorySuccess, Outcome::kPassed}, 2},
                                          {{TestMode::kXfail, Outcome::kXfailed}, 2},
                                          {{std::nullopt, Outcome::kSkipped}, 1}}));
}

TEST(Judge, NewlyFailingTestsComeFirst) {
  std::vector<TestResult> now = {
      r("c.py::t", "mandatory_success", "failed"), r("b.py::t", "mandatory_success", "error"),
      r("a.py::t", "mandatory_success", "failed"), r("d.py::t", "xfail_strict", "passed"),
      r("e.py::t", "mandatory_success", "passed")};
  // In the last green run b errored under xfail and d was absent; a passed.
  std::vector<TestResult> green = {r("b.py::t", "xfail", "error"),
                                   r("a.py::t", "mandatory_success", "passed"),
                                   r("c.py::t", "xfail", "failed")};
  Verdict v = judge(now, &green);
  EXPECT_TRUE(v.compared_to_green);
  std::vector<std::pair<std::string, bool>> got;
  for (const auto& f : v.failing) got.emplace_back(f.test_id, f.newly);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, bool>>{
                {"a.py::t", true}, {"d.py::t", true}, {"b.py::t", false}, {"c.py::t", false}}));

  // Without a green run there is nothing to be new against: by id only.
  v = judge(now, nullptr);
  EXPECT_FALSE(v.compared_to_green);
  got.clear();
  for (const auto& f : v.failing) got.emplace_back(f.test_id, f.newly);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, bool>>{
                {"a.py::t", false}, {"b.py::t", false}, {"c.py::t", false}, {"d.py::t", false}}));
}

TEST(Judge, FlakyPassesAreListed) {
  Verdict v = judge({r("z.py::t", "mandatory_success", "passed", "", true),
                     r("a.py::t", "xfail", "xfailed", "", true), r("m.py::t", "", "passed")},
                    nullptr);
  EXPECT_TRUE(v.success());
  EXPECT_EQ(v.flaky, (std::vector<std::string>{"a.py::t", "z.py::t"}));
}

TEST(Judge, FormatsACompactTable) {
  TestResult boom = r("test/a.py::TestA::test_x", "mandatory_success", "failed", "RuntimeError");
  boom.message = "RuntimeError: boom\nTraceback ...";
  TestResult crash = r("test/b.py::test_y", "", "error", "SIGSEGV");
  TestResult strict = r("test/c.py::TestC::test_z", "xfail_strict", "failed", "XPASS(strict)");
  strict.message = "[XPASS(strict)] known bad";
  std::vector<TestResult> now = {
      boom,
      crash,
      strict,
      r("test/a.py::TestA::test_ok", "mandatory_success", "passed"),
      r("test/a.py::TestA::test_flaky", "mandatory_success", "passed", "", true),
      r("test/d.py::test_x", "xfail", "xfailed"),
      r("test/d.py::test_s", "skip", "skipped")};
  std::vector<TestResult> green = {r("test/b.py::test_y", "", "error")};
  EXPECT_EQ(format_verdict(judge(now, &green)),
            R"(verdict: failure
  2 variants of mode mandatory_success (or unknown) failed or errored
  1 variant of mode xfail_strict passed

mode               passed  failed  error  skipped  xfailed  xpassed  total
mandatory_success       2       1      0        0        0        0      3
xfail                   0       0      0        0        1        0      1
xfail_strict            0       1      0        0        0        0      1
skip                    0       0      0        1        0        0      1
(unknown)               0       0      1        0        0        0      1
total                   2       2      1        1        1        0      7

failing (3; 2 new since the last green run):
  new  failed  test/a.py::TestA::test_x  [mandatory_success]  RuntimeError: boom
  new  failed  test/c.py::TestC::test_z  [xfail_strict]  [XPASS(strict)] known bad
       error   test/b.py::test_y  [unknown mode]  SIGSEGV

flaky, passed on a rerun (1):
  test/a.py::TestA::test_flaky
)");
  EXPECT_EQ(format_verdict(judge({r("t.py::a", "mandatory_success", "passed")}, nullptr)),
            R"(verdict: success

mode               passed  failed  error  skipped  xfailed  xpassed  total
mandatory_success       1       0      0        0        0        0      1
total                   1       0      0        0        0        0      1
)");
}

}  // namespace
}  // namespace ootci
