// `ootci select wave2`: whether a staged selection's wave 2 runs, from the JUnit reports of every
// shard of its wave 1, decided as `ootci run` decides its second stage on one machine
// (docs/run.md, "Waves").
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/text.h"
#include "cli/commands.h"
#include "evidence/baseline.h"
#include "evidence/evidence_path.h"
#include "evidence/junit_ingest.h"
#include "plan/plan_resolve.h"
#include "select/waves.h"

namespace ootci {
namespace {

struct Wave2Args {
  std::string config, select, evidence, output, github_output;
  std::vector<std::string> reports;
};

// The last green run these legs' merged run will be judged against: `ootci ingest`'s runs of
// the backend (they have no config hash), in the evidence the workflow keeps, if any.
Baseline ingested_baseline(const BackendConfig& config, const std::string& evidence_flag) {
  std::string db = evidence_flag.empty() ? evidence_path(config) : evidence_flag;
  if (!std::filesystem::exists(db)) return {};
  auto store = EvidenceStore::open(db);
  RunInfo merged;
  merged.backend = config.name;
  return baseline_of(*store, merged);
}

void wave2(const Wave2Args& a) {
  BackendConfig config = load_backend_or_exit(a.config);
  PlanResult plan = resolve_plan(config);
  for (const auto& e : plan.errors) std::cerr << e << "\n";
  if (!plan.ok()) throw ExitStatus{1};
  std::vector<std::string> files;
  for (const auto& f : plan.plan["files"]) files.push_back(f["relpath"].get<std::string>());
  Selection selection = load_selection(a.select);

  std::vector<TestResult> wave1;
  for (const auto& report : a.reports)
    ingest_junit(report, [&](TestResult&& t) { wave1.push_back(std::move(t)); });
  Baseline green = ingested_baseline(config, a.evidence);
  nlohmann::json decision = decide_wave2(selection, files, wave1, green.results_or_null());

  bool ran = decision["ran"];
  std::string why = decision["why"];
  size_t tests = decision["tests"].size();
  std::cout << fmt::format("wave 1: {} results from {} report{}\n", wave1.size(), a.reports.size(),
                           a.reports.size() == 1 ? "" : "s");
  std::cout << fmt::format("wave 2 ({} tests): {}: {}\n", tests, ran ? "runs" : "does not run",
                           why);
  if (!a.output.empty()) write_file_atomically(a.output, decision.dump(2) + "\n");
  std::string output = a.github_output;
  if (output.empty()) output = process_env("GITHUB_OUTPUT").value_or("");
  if (!output.empty())
    append_to_file(output, fmt::format("run={}\ntests={}\nwhy={}\n", ran ? "true" : "false", tests,
                                       one_line(why)));
}

}  // namespace

void add_select_wave2_commands(CLI::App& select) {
  static Wave2Args args;
  auto* cmd = select.add_subcommand(
      "wave2",
      "Whether a staged selection's wave 2 runs, from the JUnit reports of its wave 1's shards");
  cmd->add_option("--config", args.config, "ootci.yaml")->required();
  cmd->add_option("--select", args.select, "the staged selection (ootci select changed --staged)")
      ->required();
  cmd->add_option("REPORT", args.reports, "wave 1's JUnit XML reports, one per shard")->required();
  cmd->add_option("--evidence", args.evidence,
                  "evidence.db holding the last green run (default: <workspace>/evidence.db)");
  cmd->add_option("-o,--output", args.output,
                  "write the decision here: {\"tests\", \"ran\", \"why\"}, for ootci ingest "
                  "--second-stage");
  cmd->add_option("--github-output", args.github_output,
                  "append run=, tests= and why= lines here too (default: $GITHUB_OUTPUT when set)");
  cmd->callback([] { wave2(args); });
}

}  // namespace ootci
