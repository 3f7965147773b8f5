#include "plan/plan_lint.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

using json = nlohmann::json;

json rule(const std::string& method, bool exact, const std::string& mode,
          const std::string& source) {
  return {
      {"class", "TestA"}, {"method", method}, {"exact", exact}, {"mode", mode}, {"source", source}};
}

std::vector<std::string> lines(const std::vector<LintFinding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(format_finding(f));
  return out;
}

TEST(PlanLint, ReportsWhatSpyresCheckerReports) {
  json plan = {
      {"files",
       json::array({
           {{"relpath", "test/test_a.py"},
            {"labels", json::array({"unit"})},
            {"rules", json::array({
                          rule("test_one", true, "mandatory_success", "/c/one.yaml:5:9"),
                          rule("test_one", true, "xfail", "/c/two.yaml:7:9"),
                          rule("test_t.*", false, "xfail", "/c/two.yaml:8:9"),
                          rule("test_gone", true, "skip", "/c/one.yaml:6:9"),
                          rule("test_mean_3d", true, "skip", "/c/one.yaml:9:9"),
                      })}},
           {{"relpath", "test/test_b.py"}, {"labels", json::array()}, {"rules", json::array()}},
       })}};
  std::map<std::string, std::vector<std::string>> tests = {
      {"test/test_a.py", {"test_one", "test_two", "test_mean", "test_x"}}, {"test/test_b.py", {}}};
  std::vector<LintFinding> findings = lint_plan(plan, tests);
  EXPECT_EQ(lines(findings),
            (std::vector<std::string>{
                // test_mean is covered by the name written for one of its parametrised variants.
                "/c/one.yaml:5:9: duplicate: named in 2 configs with different modes: "
                "/c/one.yaml:5:9 (mandatory_success), /c/two.yaml:7:9 (xfail)",
                "test/test_a.py: uncovered: test_x: no config entry names this test",
                "/c/one.yaml:6:9: dead: 'TestA::test_gone' matches no test of test/test_a.py",
                "test/test_b.py: unlabelled: no labels: Spyre's CI filter never selects this file",
            }));
  json j = findings_json(findings);
  EXPECT_EQ(j["counts"],
            (json{{"dead", 1}, {"duplicate", 1}, {"uncovered", 1}, {"unlabelled", 1}}));
  EXPECT_EQ(j["findings"][0]["name"], "test_one");
}

TEST(PlanLint, SameModeInTwoConfigsAndOneConfigAreNotDuplicates) {
  json plan = {
      {"files", json::array({{{"relpath", "t.py"},
                              {"labels", json::array({"unit"})},
                              {"rules", json::array({
                                            rule("test_one", true, "xfail", "/c/a.yaml:1:1"),
                                            rule("test_one", true, "xfail", "/c/b.yaml:1:1"),
                                            rule("test_.*", false, "skip", "/c/a.yaml:2:1"),
                                        })}}})}};
  EXPECT_TRUE(lint_plan(plan, {{"t.py", {"test_one"}}}).empty());
}

}  // namespace
}  // namespace ootci
