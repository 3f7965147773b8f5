// `ootci discover`: run upstream test files on the device with every variant mandatory and the op
// recorder on, keeping each variant's raw outcome and device ops as evidence (docs/select.md).
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "base/error.h"
#include "base/time.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "discover/discover.h"
#include "evidence/evidence_path.h"
#include "run/runner.h"
#include "select/shards.h"

namespace ootci {
namespace {

struct DiscoverArgs {
  std::string config;
  std::vector<std::string> files;
  bool force = false;
  int workers = 0;
  int probe_inputs = 0;
  std::string isolation;  // --isolation: overrides run.isolation
  std::string evidence;
  std::string shard;    // --shard K/N
  std::string timings;  // --timings DB
};

std::string outcome_counts(const DiscoverySummary& s) {
  std::string out;
  for (Outcome outcome : kOutcomes) {
    auto it = s.outcomes.find(outcome);
    int n = it == s.outcomes.end() ? 0 : it->second;
    if (n == 0 && outcome == Outcome::kXpassed) continue;  // only under xfail marks
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, to_string(outcome));
  }
  return out;
}

void discover_command(const DiscoverArgs& a) {
  DiscoverRequest req;
  req.backend = load_backend_or_exit(a.config);
  req.evidence_path = a.evidence.empty() ? evidence_path(req.backend) : a.evidence;
  req.file_globs = a.files;
  req.force = a.force;
  req.workers = a.workers;
  req.probe_inputs = a.probe_inputs;
  if (!a.isolation.empty()) req.backend.run.isolation = a.isolation;
  if (!a.shard.empty()) std::tie(req.part.k, req.part.n) = parse_shard(a.shard);
  if (!a.timings.empty() && a.shard.empty())
    throw Error("--timings places the variants of a shard; give --shard K/N with it");
  req.timings = a.timings;
  req.tty = isatty(STDERR_FILENO);

  req.stop = &stop_runs_on_signal();

  DiscoverReport report = discover(req);
  std::cout << fmt::format("backend revision: {}\n", report.backend_rev);
  for (const auto& c : report.continued) {
    if (c.status == RunStatus::kFinished)
      std::cout << fmt::format("{} pass: run {} finished it before ({} variants); taken as it is\n",
                               c.pass, c.run_id, c.settled);
    else
      std::cout << fmt::format(
          "{} pass: continuing run {} ({} when it stopped{}; {} variants settled)\n", c.pass,
          c.run_id, to_string(c.status),
          c.status == RunStatus::kRunning ? ", as a killed run is left" : "", c.settled);
  }
  for (const auto& f : report.up_to_date)
    std::cout << fmt::format("up to date: {} (run {}, {})\n", f.relpath, f.run_id,
                             iso8601_utc(f.discovered_ms));
  if (report.probe) {
    const InputProbeReport& p = *report.probe;
    std::cout << fmt::format(
        "input probe: {} tests that drew inputs on the device, {} passes: {} failed with their "
        "inputs shifted (they depend on the values they draw), {}\n",
        p.tests, p.passes, p.failed,
        p.interrupted ? "interrupted (the rest stay unprobed)"
                      : fmt::format("{} held", p.tests - p.failed));
  }
  // A stopped probe keeps what it found; the exit status says it stopped, as for the passes.
  bool probe_stopped = report.probe && report.probe->interrupted;
  if (!report.run) {
    std::cout << fmt::format(
        "discover: nothing to run ({} files up to date; --force runs them again)\n",
        report.up_to_date.size());
    if (probe_stopped) throw ExitStatus{130};
    return;
  }
  for (const auto& s : report.files) {
    std::cout << fmt::format("{}: {} variants ({}); {} distinct device ops\n", s.relpath,
                             s.variants, outcome_counts(s), s.distinct_ops);
    for (const auto& e : s.file_errors) std::cout << fmt::format("  file error: {}\n", e);
  }
  std::cout << fmt::format("evidence: {}{}\n", req.evidence_path,
                           a.shard.empty() ? "" : fmt::format(" (shard {})", a.shard));
  if (report.run->status == RunStatus::kInterrupted) {
    std::cout << fmt::format("discover: run {} interrupted; its files stay undiscovered\n",
                             report.run->run_id);
    throw ExitStatus{130};
  }
  if (!report.stopped_recording.empty()) {
    std::cout << fmt::format(
        "discover: run {} interrupted in its recording pass (run {}); its files stay "
        "undiscovered until discover continues it\n",
        report.run->run_id, report.stopped_recording);
    throw ExitStatus{130};
  }
  std::cout << fmt::format("discover: run {}\n", report.run->run_id);
  if (probe_stopped) throw ExitStatus{130};
}

}  // namespace

void add_discover_commands(CLI::App& app) {
  static DiscoverArgs args;
  auto* cmd = app.add_subcommand(
      "discover",
      "Run test files on the device with every variant mandatory and record each variant's "
      "outcome and device ops (execution evidence)");
  cmd->add_option("--config", args.config, "ootci.yaml")->required();
  cmd->add_option(
      "--files", args.files,
      "test files or globs relative to upstream.torch_root (default: the plan's files)");
  cmd->add_flag("--force", args.force,
                "run files already discovered for this content and revision");
  cmd->add_option("--workers", args.workers, "test files in parallel (default: run.workers)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--probe-inputs", args.probe_inputs,
                  fmt::format("then run each passing test that draws inputs on the device up to "
                              "N more times, its inputs shifted, to find the tests whose outcome "
                              "depends on the values they draw (1 to {}; tests probed before are "
                              "left alone)",
                              kMaxInputProbes))
      ->check(CLI::Range(1, kMaxInputProbes));
  add_isolation_option(cmd, args.isolation);
  cmd->add_option("--evidence", args.evidence, "evidence database (default: workspace)");
  cmd->add_option("--shard", args.shard,
                  "discover only part K of N of every file's variants (K/N), for one machine of "
                  "N; merge the N databases with `ootci evidence merge`");
  cmd->add_option("--timings", args.timings,
                  "with --shard: an evidence database (a previous discovery) whose recorded "
                  "durations balance the parts; variants it lacks are split by a hash of their id");
  cmd->callback([] { discover_command(args); });
}

}  // namespace ootci
