#pragma once
// `ootci plan lint`: the static checks Torch Spyre runs on its configs in CI (its oot_checker),
// over a resolved plan and the test methods of each upstream file (docs/plan.md, "plan lint").
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ootci {

struct LintFinding {
  std::string kind;     // duplicate | uncovered | dead | unlabelled
  std::string file;     // the upstream file's relpath
  std::string name;     // the test base name, or the config name as written
  std::string where;    // "config:line:col" when a config entry is the subject
  std::string message;  // one line
};

// `tests_by_file`: relpath -> base method names of its tests (as test_hashes.py finds them).
// A file the plan lists but `tests_by_file` lacks is only checked for labels.
std::vector<LintFinding> lint_plan(
    const nlohmann::json& plan,
    const std::map<std::string, std::vector<std::string>>& tests_by_file);

std::string format_finding(const LintFinding& f);
nlohmann::json findings_json(const std::vector<LintFinding>& findings);

}  // namespace ootci
