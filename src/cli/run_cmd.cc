// `ootci run`: run the plan on the device and keep the evidence (docs/run.md).
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "evidence/evidence_path.h"
#include "evidence/judge.h"
#include "plan/backend_config.h"
#include "run/runner.h"
#include "select/shards.h"

namespace ootci {
namespace {

struct RunArgs {
  std::string config;
  std::string select;
  std::string shard;
  int wave = 0;
  std::string resume;
  std::string evidence;
  std::string run_id;
  std::vector<std::string> labels;
  int workers = 0;
  std::string isolation;  // --isolation: overrides run.isolation
};

void run_command(const RunArgs& a) {
  RunRequest req;
  req.backend = load_backend_or_exit(a.config);
  req.evidence_path = a.evidence.empty() ? evidence_path(req.backend) : a.evidence;
  if (!a.select.empty()) req.selection = load_selection(a.select);
  if (!a.shard.empty()) std::tie(req.shard, req.shards) = parse_shard(a.shard);
  req.wave = a.wave;
  req.workers = a.workers;
  if (!a.isolation.empty()) req.backend.run.isolation = a.isolation;
  if (!a.labels.empty()) req.labels = a.labels;
  req.resume_run = a.resume;
  req.run_id = a.run_id;
  req.tty = isatty(STDERR_FILENO);

  req.stop = &stop_runs_on_signal();

  RunReport report = run_plan(req);
  std::cout << fmt::format("run {} {}{}: {} results\n", report.run_id, to_string(report.status),
                           report.verdict ? " (" + to_string(*report.verdict) + ")" : "",
                           report.results.size());
  if (report.status == RunStatus::kFinished)
    std::cout << format_verdict(judge(report.results, nullptr));
  std::cout << fmt::format("junit: {}\nmanifest: {}\nreport: {}\nevidence: {}\n", report.junit_path,
                           report.manifest_path, report.html_path, req.evidence_path);
  if (report.status == RunStatus::kInterrupted) {
    std::cout << fmt::format("interrupted; continue with: ootci run --config {} --resume {}\n",
                             a.config, report.run_id);
    throw ExitStatus{130};
  }
  if (report.verdict != Conclusion::kSuccess) throw ExitStatus{1};
}

}  // namespace

void add_run_commands(CLI::App& app) {
  static RunArgs args;
  auto* cmd = app.add_subcommand("run", "Run the plan's upstream tests on the device");
  cmd->add_option("--config", args.config, "ootci.yaml")->required();
  cmd->add_option("--select", args.select, "selection JSON: {\"files\": [...], \"tests\": [...]}");
  cmd->add_option("--shard", args.shard, "run shard K of N (K/N)");
  cmd->add_option("--wave", args.wave,
                  "run only this wave of the selection: 1 (its tests) or 2 (a staged selection's "
                  "\"then\"), sharded with --shard as `ootci shards --select` splits it")
      ->check(CLI::Range(1, 2))
      ->needs("--select");
  cmd->add_option("--workers", args.workers, "test files in parallel (default: run.workers)")
      ->check(CLI::Range(1, 256));
  add_isolation_option(cmd, args.isolation);
  cmd->add_option("--resume", args.resume, "continue an interrupted run");
  cmd->add_option("--run-id", args.run_id, "id for the new run (default: generated)")
      ->excludes("--resume");
  cmd->add_option("--evidence", args.evidence, "evidence database (default: workspace)");
  cmd->add_option("--labels", args.labels,
                  "run only files and tests with one of these labels, e.g. unit,trunk "
                  "(default: run.labels)")
      ->delimiter(',');
  cmd->callback([] { run_command(args); });
}

}  // namespace ootci
