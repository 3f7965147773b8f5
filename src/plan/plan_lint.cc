#include "plan/plan_lint.h"

#include <fmt/format.h>

#include <regex>
#include <set>

#include "base/yaml_doc.h"

namespace ootci {
namespace {

// One rule of the plan, matched as Spyre matches names: the exact base name, or a regex that
// must match the whole base name.
struct LintRule {
  std::string text;  // as written, with the class part
  std::string method;
  bool exact = true;
  std::string mode;
  std::string source;  // "config:line:col"
  std::string config;  // the config's path, the source without its position
  std::optional<std::regex> pattern;

  bool matches(const std::string& base) const {
    return exact ? method == base : std::regex_match(base, *pattern);
  }
  // Spyre's checker also counts a name written for a parametrised variant of a base
  // ("test_mean_3d_dim0" for test_mean) as covering it.
  bool targets(const std::string& base) const {
    return matches(base) || method.rfind(base + "_", 0) == 0;
  }
};

std::vector<LintRule> rules_of(const nlohmann::json& file) {
  std::vector<LintRule> out;
  for (const auto& r : file.value("rules", nlohmann::json::array())) {
    LintRule rule;
    rule.method = r.value("method", "");
    rule.exact = r.value("exact", true);
    rule.text =
        r["class"].is_string() ? r["class"].get<std::string>() + "::" + rule.method : rule.method;
    rule.mode = r.value("mode", "");
    rule.source = r.value("source", "");
    rule.config = parse_yaml_where(rule.source).file;
    if (!rule.exact) {
      try {
        rule.pattern.emplace(rule.method, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        continue;  // plan check reports it; a plan with it is never written
      }
    }
    out.push_back(std::move(rule));
  }
  return out;
}

}  // namespace

std::vector<LintFinding> lint_plan(
    const nlohmann::json& plan,
    const std::map<std::string, std::vector<std::string>>& tests_by_file) {
  std::vector<LintFinding> out;
  for (const auto& file : plan.value("files", nlohmann::json::array())) {
    std::string relpath = file.value("relpath", "");
    if (file.value("labels", nlohmann::json::array()).empty())
      out.push_back(
          {"unlabelled", relpath, "", "", "no labels: Spyre's CI filter never selects this file"});
    auto tests = tests_by_file.find(relpath);
    if (tests == tests_by_file.end()) continue;
    std::vector<LintRule> rules = rules_of(file);
    std::set<std::string> bases(tests->second.begin(), tests->second.end());
    for (const auto& base : bases) {
      std::vector<const LintRule*> hits;
      for (const auto& r : rules)
        if (r.targets(base)) hits.push_back(&r);
      if (hits.empty()) {
        out.push_back({"uncovered", relpath, base, "", "no config entry names this test"});
        continue;
      }
      // Exact names win over regexes (Spyre), so only the entries that can decide the test count.
      std::vector<const LintRule*> deciding;
      for (const auto* r : hits)
        if (r->exact && r->matches(base)) deciding.push_back(r);
      if (deciding.empty()) deciding = hits;
      hits = deciding;
      std::set<std::string> configs, modes;
      for (const auto* r : hits) {
        configs.insert(r->config);
        modes.insert(r->mode);
      }
      if (configs.size() > 1 && modes.size() > 1) {
        std::string places;
        for (const auto* r : hits)
          places += fmt::format("{}{} ({})", places.empty() ? "" : ", ", r->source, r->mode);
        out.push_back(
            {"duplicate", relpath, base, hits[0]->source,
             fmt::format("named in {} configs with different modes: {}", configs.size(), places)});
      }
    }
    for (const auto& r : rules) {
      bool live = false;
      for (const auto& base : bases) live = live || r.targets(base);
      if (!live)
        out.push_back({"dead", relpath, r.text, r.source,
                       fmt::format("'{}' matches no test of {}", r.text, relpath)});
    }
  }
  return out;
}

std::string format_finding(const LintFinding& f) {
  std::string subject = f.where.empty() ? f.file : f.where;
  std::string name = f.name.empty() || !f.where.empty() ? "" : f.name + ": ";
  return fmt::format("{}: {}: {}{}", subject, f.kind, name, f.message);
}

nlohmann::json findings_json(const std::vector<LintFinding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  std::map<std::string, int> counts = {
      {"duplicate", 0}, {"uncovered", 0}, {"dead", 0}, {"unlabelled", 0}};
  for (const auto& f : findings) {
    list.push_back({{"kind", f.kind},
                    {"file", f.file},
                    {"name", f.name},
                    {"where", f.where},
                    {"message", f.message}});
    ++counts[f.kind];
  }
  return {{"findings", list}, {"counts", counts}};
}

}  // namespace ootci
