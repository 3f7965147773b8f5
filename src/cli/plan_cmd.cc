// `ootci plan check|resolve|env`: validate test-suite configs, resolve ootci.yaml into plan.json,
// and print the environment pytest needs to run under a plan.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/error.h"
#include "base/text.h"
#include "cli/commands.h"
#include "plan/backend_config.h"
#include "plan/plan_env.h"
#include "plan/plan_json.h"
#include "plan/plan_lint.h"
#include "plan/plan_resolve.h"
#include "plan/suite_config.h"
#include "select/test_hashes.h"

namespace ootci {
namespace {

// "file: yaml.path-without-indices: message" of a "file:line:col: yaml.path: message" diagnostic,
// so a warning repeated down a long list is printed once with a count.
std::string warning_kind(const std::string& w) {
  static const std::regex kPosition(R"(:\d+:\d+: )"), kIndex(R"(\[\d+\])");
  return std::regex_replace(std::regex_replace(w, kPosition, ": "), kIndex, "[]");
}

// Prints diagnostics the way `plan check` documents them and stops with exit code 1 on errors.
// Errors are all printed; a warning of the same kind in the same file is printed once, with how
// many more there are.
void report(const std::vector<std::string>& errors, const std::vector<std::string>& warnings) {
  for (const auto& e : errors) std::cerr << e << "\n";
  std::map<std::string, size_t> count;
  for (const auto& w : warnings) ++count[warning_kind(w)];
  for (const auto& w : warnings) {
    auto it = count.find(warning_kind(w));
    if (it == count.end()) continue;
    std::cerr << "warning: " << w;
    if (it->second > 1)
      std::cerr << fmt::format(" (and {} more like it in this file)", it->second - 1);
    std::cerr << "\n";
    count.erase(it);
  }
  if (!errors.empty()) throw ExitStatus{1};
}

// Resolves and writes the plan; the summary goes to `summary` (stderr for `plan env`, whose
// stdout is meant for eval).
void resolve_and_write(const BackendConfig& backend, const std::string& out, std::ostream& summary,
                       bool strict = false) {
  PlanResult r = resolve_plan(backend, strict);
  report(r.errors, r.warnings);
  write_plan(r.plan, out);
  summary << fmt::format("wrote {}: {} files, {} rules\n", out, r.file_count, r.rule_count);
}

void plan_check(const std::vector<std::string>& files, bool strict) {
  size_t rules = 0;
  std::vector<std::string> errors, warnings;
  for (const auto& f : files) {
    SuiteConfigResult r = load_suite_config(f, strict);
    errors.insert(errors.end(), r.errors.begin(), r.errors.end());
    warnings.insert(warnings.end(), r.warnings.begin(), r.warnings.end());
    rules += r.config.rule_count();
  }
  report(errors, warnings);
  std::cout << fmt::format("ok: {} files, {} rules\n", files.size(), rules);
}

void plan_env(const std::string& config, const std::string& plan_arg, bool as_json) {
  BackendConfig backend = load_backend_or_exit(config);
  std::string plan = plan_arg;
  if (plan.empty()) {
    plan = backend.workspace + "/plan.json";
    resolve_and_write(backend, plan, std::cerr);
  } else {
    read_plan_json(plan);  // must at least be one this ootci writes
  }
  auto env = plan_environment(backend, plan, ootci_python_dir(), process_env("PYTHONPATH"));
  if (as_json) {
    std::cout << nlohmann::json(env).dump(2) << "\n";
    return;
  }
  for (const auto& [key, value] : env)  // std::map: sorted by key
    std::cout << "export " << key << "=" << shell_quote(value) << "\n";
}

void plan_lint(const std::string& config, bool as_json) {
  BackendConfig backend = load_backend_or_exit(config);
  PlanResult r = resolve_plan(backend);
  report(r.errors, {});
  std::vector<LintFinding> findings = lint_plan(
      r.plan,
      test_names_by_file(backend, r.plan, [](const std::string& relpath, const std::string& why) {
        std::cerr << fmt::format("plan lint: {}: not read: {}\n", relpath, why);
      }));
  if (as_json) {
    std::cout << findings_json(findings).dump(2) << "\n";
  } else {
    for (const auto& f : findings) std::cout << format_finding(f) << "\n";
    std::cout << fmt::format("{} findings in {} files\n", findings.size(), r.file_count);
  }
  if (!findings.empty()) throw ExitStatus{1};
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto* plan = app.add_subcommand("plan", "Test-suite configs and the resolved plan");
  plan->require_subcommand(1);

  auto* check = plan->add_subcommand("check", "Validate test-suite configs; report every error");
  static std::vector<std::string> check_files;
  static bool check_strict = false;
  check->add_option("FILE", check_files, "test_suite_config YAML files")->required();
  check->add_flag("--strict", check_strict, "unknown keys are errors, not warnings");
  check->callback([] { plan_check(check_files, check_strict); });

  auto* resolve = plan->add_subcommand("resolve", "Resolve ootci.yaml and its configs into a plan");
  static std::string resolve_config, resolve_out;
  static bool resolve_strict = false;
  resolve->add_option("--config", resolve_config, "ootci.yaml")->required();
  resolve->add_option("-o,--output", resolve_out, "plan.json to write")->required();
  resolve->add_flag("--strict", resolve_strict, "unknown keys are errors, not warnings");
  resolve->callback([] {
    resolve_and_write(load_backend_or_exit(resolve_config), resolve_out, std::cout, resolve_strict);
  });

  auto* lint = plan->add_subcommand(
      "lint", "Spyre's static checks: duplicates, uncovered tests, dead names, missing labels");
  static std::string lint_config;
  static bool lint_json = false;
  lint->add_option("--config", lint_config, "ootci.yaml")->required();
  lint->add_flag("--json", lint_json, "print the findings as JSON");
  lint->callback([] { plan_lint(lint_config, lint_json); });

  auto* env = plan->add_subcommand("env", "Print the environment for running pytest under a plan");
  static std::string env_config, env_plan;
  static bool env_json = false;
  env->add_option("--config", env_config, "ootci.yaml")->required();
  env->add_option("--plan", env_plan,
                  "an existing plan.json (default: resolve into <workspace>/plan.json)");
  env->add_flag("--json", env_json, "print a JSON object instead of export lines");
  env->callback([] { plan_env(env_config, env_plan, env_json); });
}

}  // namespace ootci
