// `ootci attribute`: who broke a red run, the backend, upstream (tests or core), the
// infrastructure or a flake, and the culprit commit (docs/attribute.md).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "attribute/attribution.h"
#include "attribute/runner_probes.h"
#include "attribute/triage_report.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/git.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "evidence/evidence_path.h"
#include "evidence/judge.h"
#include "run/runner.h"
#include "run/target_revisions.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

struct AttributeArgs {
  std::string config, run, evidence;
  int reruns = 0, probe_reruns = -1, max_probes = 0;
  bool json = false;
  std::string isolation;  // --isolation: overrides run.isolation for every probe
};

// The newest green run that started before `run`, preferring the same test-suite configs; a
// backend commit that edits its configs changes the config hash, and is still comparable.
std::optional<RunInfo> green_before(EvidenceStore& store, const RunInfo& run) {
  std::optional<RunInfo> any_config;
  for (const RunInfo& r : store.runs(run.backend)) {  // newest first
    if (r.id == run.id || r.started_ms >= run.started_ms || !r.green() || !r.shard.empty())
      continue;
    if (r.config_hash == run.config_hash) return r;
    if (!any_config) any_config = r;
  }
  return any_config;
}

bool clean_checkout(const std::string& repo) {
  std::optional<std::string> changes =
      try_git_output(repo, {"status", "--porcelain", "--untracked-files=no"});
  return changes && changes->empty();
}

Combination combination_of(const RunInfo& run) {
  auto t = manifest_target_revisions(run.manifest);
  if (!t) return {};
  return {t->backend, t->tests, t->core};
}

void attribute_command(const AttributeArgs& a) {
  BackendConfig config = load_backend_or_exit(a.config);
  if (!a.isolation.empty()) config.run.isolation = a.isolation;
  std::string db = a.evidence.empty() ? evidence_path(config) : a.evidence;
  if (!fs::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  auto store = EvidenceStore::open(db);
  std::optional<RunInfo> run = store->run(a.run);
  if (!run) throw Error(fmt::format("run {} not found in {}", a.run, db));
  if (run->status != RunStatus::kFinished)
    throw Error(
        fmt::format("run {} is {}: attribute a finished run", run->id, to_string(run->status)));

  std::vector<TestResult> results = store->results(run->id);
  std::optional<RunInfo> green = green_before(*store, *run);
  std::vector<TestResult> green_results;
  if (green) green_results = store->results(green->id);
  Verdict verdict = judge(results, green ? &green_results : nullptr);

  AttributionInput in;
  for (const auto& f : verdict.failing)
    if (f.newly || !green) in.newly_failing.push_back(f.test_id);
  in.run = combination_of(*run);
  if (green) in.green = combination_of(*green);
  in.revisions_recorded = manifest_target_revisions(run->manifest) &&
                          (!green || manifest_target_revisions(green->manifest));
  in.reruns = a.reruns > 0 ? a.reruns : config.attribute.reruns;
  in.probe_reruns = a.probe_reruns >= 0 ? a.probe_reruns : config.attribute.probe_reruns;
  in.max_probes = a.max_probes > 0 ? a.max_probes : config.attribute.max_probes;

  AttributionContext ctx;
  ctx.run_id = run->id;
  ctx.green_run_id = green ? green->id : "";
  for (const auto& r : results) ctx.primary_executions += 1 + r.reruns;
  if (run->manifest.is_object() && run->manifest.contains("second_stage"))
    ctx.second_stage = run->manifest["second_stage"];

  const std::atomic<bool>& stop = stop_runs_on_signal();

  std::string cache_dir = config.workspace + "/attribute";
  std::string work_dir = fmt::format("{}/{}", cache_dir, run->id);
  fs::remove_all(work_dir);  // a fresh attribution: the probes of an earlier one are not evidence
  fs::create_directories(work_dir);
  // The checkout counts as a target's revision only when clean: an edited tree is not that commit.
  TargetRevisions current = current_target_revisions(config);
  if (!clean_checkout(config.attribute.backend_repo)) current.backend.clear();
  if (!clean_checkout(config.attribute.tests_repo)) current.tests.clear();
  RunnerProbes probes(config, current, cache_dir, work_dir, std::cerr, &stop);
  Attribution attribution = attribute_failures(in, probes);
  if (stop) {
    // An interrupted probe proves nothing, so no verdict is better than one built on it.
    std::cerr << "attribute: interrupted; no triage_verdict written\n";
    throw ExitStatus{130};
  }

  nlohmann::json triage = triage_verdict(attribution, in, ctx);
  std::string markdown = triage_markdown(attribution, in, ctx);
  std::string run_dir = fmt::format("{}/runs/{}", config.workspace, run->id);
  fs::create_directories(run_dir);
  write_file_atomically(run_dir + "/triage_verdict.json", triage.dump(2) + "\n");
  write_file_atomically(run_dir + "/triage.md", markdown);
  if (a.json)
    std::cout << triage.dump(2) << "\n";
  else
    std::cout << markdown
              << fmt::format("\ntriage_verdict: {}/triage_verdict.json\nreport: {}/triage.md\n",
                             run_dir, run_dir);
}

}  // namespace

void add_attribute_commands(CLI::App& app) {
  static AttributeArgs args;
  auto* cmd = app.add_subcommand(
      "attribute",
      "Who broke a red run (backend, upstream, infra or a flake) and the culprit commit");
  cmd->add_option("--config", args.config, "ootci.yaml (its attribute: section)")->required();
  cmd->add_option("--run", args.run, "the red run to attribute")->required();
  cmd->add_option("--evidence", args.evidence,
                  "evidence database (default: <workspace>/evidence.db)");
  cmd->add_option("--reruns", args.reruns, "flake check reruns (default: attribute.reruns)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--probe-reruns", args.probe_reruns,
                  "reruns of a failing variant inside a probe (default: attribute.probe_reruns)")
      ->check(CLI::Range(0, 5));
  cmd->add_option("--max-probes", args.max_probes,
                  "probe budget: control, expansions, bisection (default: attribute.max_probes)")
      ->check(CLI::Range(1, 200));
  add_isolation_option(cmd, args.isolation);
  cmd->add_flag("--json", args.json, "print the triage_verdict instead of the report");
  cmd->callback([] { attribute_command(args); });
}

}  // namespace ootci
