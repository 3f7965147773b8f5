#pragma once
// `ootci run`: runs a resolved plan's upstream test files on the device, isolates crashes and
// hangs, reruns failures, and records every result in the evidence store as it finishes.
#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "plan/backend_config.h"
#include "select/selection.h"
#include "select/shards.h"

namespace ootci {

// Which of `ootci discover`'s passes a run is; kept in its manifest (`discovery_pass`), where a
// discovery stopped part way finds its passes again to continue them.
enum class DiscoveryPass { kPlain, kRecording, kInputProbe };
const char* discovery_pass_name(DiscoveryPass pass);

struct RunRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::optional<Selection> selection;
  int shard = 0, shards = 0;  // run shard K of N when shards > 0
  // Run only this wave of the selection (1: its files, tests and bases; 2: a staged selection's
  // "then"), split by wave_shards when shards > 0; 0: the whole selection, both stages in order.
  int wave = 0;
  int workers = 0;         // 0: backend.run.workers
  std::string resume_run;  // continue this run instead of starting one
  std::string run_id;      // the new run's id (default: new_run_id), e.g. chosen by the agent
  bool tty = false;        // a live progress line instead of periodic plain lines
  // Run only files and tests with one of these labels (Spyre's CI filter); nullopt: run.labels.
  std::optional<std::vector<std::string>> labels;
  // Set (by the command's signal handler) to stop early: the children are killed and the run is
  // marked interrupted, resumable with --resume. nullptr: the run goes to its end.
  const std::atomic<bool>* stop = nullptr;
};

// The files whose plan labels (suite and file labels) meet `labels`, as Spyre's CI selects them:
// a file without labels is never selected; those are returned in `unlabelled`.
std::vector<std::string> files_with_labels(const nlohmann::json& plan,
                                           const std::vector<std::string>& labels,
                                           std::vector<std::string>* unlabelled);

struct RunReport {
  std::string run_id;
  RunStatus status = RunStatus::kFinished;  // finished or interrupted
  std::optional<Conclusion> verdict;        // success or failure once finished
  std::string junit_path;
  std::string html_path;  // report.html: the run's self-contained report page
  std::string manifest_path;
  std::vector<TestResult> results;
};

// What a pass of `ootci discover` (src/discover) changes in a run. A test without a recorded
// duration gets run.discover_test_timeout_s rather than run.test_timeout_s (run/test_limits.h),
// and the workers share large files.
struct DiscoveryRun {
  DiscoveryPass pass = DiscoveryPass::kPlain;
  // The resolved plan (docs/plan.md, JSON v1) run instead of the backend's test_configs; the
  // config hash comes from its content.
  nlohmann::json plan;
  bool record_ops = false;  // record each test's device ops (OOTCI_RECORD_OPS=1)
  // Only part K of N of every file's variants (`ootci discover --shard K/N`); the run's shard.
  VariantPart part;
};

// Runs the plan, recording into `store` (whose path is request.evidence_path): a command that has
// the store open already passes it down rather than opening it again. `discovery`: the run is a
// pass of `ootci discover`.
RunReport run_plan(const RunRequest& request, EvidenceStore& store,
                   const DiscoveryRun* discovery = nullptr);
// Opens request.evidence_path for the run.
RunReport run_plan(const RunRequest& request);

// The run's worker threads: --workers, else run.workers, at least 1, and under a device pool
// (run.devices) at most one per device, since a worker owns at least one. The runner starts
// them and the progress line's ETA divides by them.
int run_workers(const RunRequest& request);

// "fork" or "spawn": run.isolation, unless the backend is not fork_safe.
std::string run_isolation(const BackendConfig& backend);

}  // namespace ootci
