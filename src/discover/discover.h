#pragma once
// `ootci discover`: execution evidence (docs/select.md). Upstream test files run on the device
// with every variant mandatory, once plainly for each variant's raw outcome and once with the op
// recorder for the aten ops it called on the device; the evidence store keeps both in one run. A
// file is discovered again only when its content or the backend's revision changed.
#include <atomic>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/evidence_store.h"
#include "plan/backend_config.h"
#include "run/runner.h"

namespace ootci {

struct DiscoveryCandidate {
  std::string path;     // absolute, canonical
  std::string relpath;  // as in test ids
  std::string sha256;   // of the file's bytes
};

// The files `globs` match (relative to upstream.torch_root unless absolute), or without globs
// the files of the backend's resolved plan. Throws Error when a glob matches no file or the plan
// has errors.
std::vector<DiscoveryCandidate> discovery_candidates(const BackendConfig& backend,
                                                     const std::vector<std::string>& globs);

// Splits candidates into those to run and those already discovered for this exact content and
// backend revision by a run of the same shard (`shard` "K/N", or "" for whole files; a complete
// merge of shards counts as whole). All run when `force`.
struct StaleSplit {
  std::vector<DiscoveryCandidate> to_run;
  std::vector<DiscoveredFile> up_to_date;
};
StaleSplit split_stale(EvidenceStore& store, const std::vector<DiscoveryCandidate>& candidates,
                       const std::string& backend_rev, const std::string& shard, bool force);

// A plan (JSON v1) running every variant of these files in mandatory_success: no rules, no
// capability lists, so outcomes are the device's raw truth. The backend section is the backend's
// own (environment, fault switches, modules).
nlohmann::json discovery_plan(const BackendConfig& backend,
                              const std::vector<DiscoveryCandidate>& files);

// What one file's discovery found.
struct DiscoverySummary {
  std::string relpath;
  int variants = 0;                      // results of single tests
  std::map<Outcome, int> outcomes;       // outcome -> variants
  std::vector<std::string> file_errors;  // whole-file errors (error_class: message head)
  size_t distinct_ops = 0;
};
std::vector<DiscoverySummary> summarize_discovery(
    const std::vector<DiscoveryCandidate>& files, const std::vector<TestResult>& results,
    const std::map<std::string, std::vector<std::string>>& ops_by_test);

// The recording pass's selection: the plain pass's variants that ran to an end. One that crashed
// its process or hung would cost its crash or its limit a second time, and a process that dies
// keeps no ops of the test it died in. A file none of whose variants did either runs whole.
Selection recording_selection(const std::vector<TestResult>& plain);

struct DiscoverRequest {
  BackendConfig backend;
  const std::atomic<bool>* stop = nullptr;  // passed to every pass (RunRequest::stop)
  std::string evidence_path;
  std::vector<std::string> file_globs;
  bool force = false;
  int workers = 0;       // 0: run.workers
  int probe_inputs = 0;  // input probe passes (--probe-inputs), at most kInputProbeShifts
  bool tty = false;
  // --shard K/N: only part K of every file's variants (placed by `timings`' durations where it
  // has them); the shard's evidence is merged with the others' by `ootci evidence merge`.
  VariantPart part;
  std::string timings;  // --timings: an evidence database whose durations place variants
};

// The input probe's shifts, in the order its passes use them: drawn once (uniform in [-2, 2],
// none smaller than 1/16) so that every discovery probes alike. Decimals, not binary fractions:
// a shift like 1.5 leaves the low bits of a value as they were, and rounding is where a changed
// value shows (bench/seed_fragility.py).
inline constexpr double kInputProbeShifts[] = {1.522,  -1.821, -1.301, -0.916, -1.658, 1.585,
                                               -1.477, -1.626, 0.145,  1.632,  0.76,   0.723,
                                               1.0,    -0.772, 0.23,   0.249};
inline constexpr int kMaxInputProbes = std::size(kInputProbeShifts);

// What the input probe did: tests probed, those a shift failed, passes run.
struct InputProbeReport {
  size_t tests = 0;
  size_t failed = 0;
  int passes = 0;
  bool interrupted = false;
};

// A pass an earlier attempt of this discovery left: continued, or taken as it was if it finished.
struct ContinuedPass {
  std::string pass;    // plain | recording
  std::string run_id;  // the earlier attempt's run, which this discovery goes on with
  RunStatus status = RunStatus::kRunning;  // as the attempt left it: running means killed
  size_t settled = 0;                      // its variants already settled
};

struct DiscoverReport {
  std::string backend_rev;
  std::vector<ContinuedPass> continued;
  std::vector<DiscoveredFile> up_to_date;
  std::optional<RunReport> run;  // unset when every file was up to date
  std::vector<DiscoverySummary> files;
  std::optional<InputProbeReport> probe;  // set when asked for (probe_inputs > 0)
  // The recording pass's run when a stop cut it short: kept, to be continued by the next
  // discover; the plain pass (`run`) finished, and no file is marked discovered.
  std::string stopped_recording;
};

// Runs both passes and, when both finished, marks the files discovered. A pass an earlier attempt
// of the same discovery (files, backend revision, shard) left unfinished is continued where it
// stopped (unless `force`). The recording pass's
// run is deleted once its ops are copied into the plain run. With probe_inputs, then probes the
// inputs of every test of these files not probed yet (probe_inputs below).
DiscoverReport discover(const DiscoverRequest& request);

// The input probe (docs/select.md, "The input probe"): each test of these files' discovery runs
// that passed plainly and drew inputs on the device runs again, once per shift, with every device
// tensor its input generation returns moved by the shift (OOTCI_PROBE_INPUTS, op_recorder.py),
// until a shift fails it. Each gets the failing shift and error, or "held" after all passes.
// Tests probed before are left alone. Each pass's run is deleted after it is read.
InputProbeReport probe_inputs(const DiscoverRequest& request, EvidenceStore& store,
                              const std::vector<DiscoveryCandidate>& files,
                              const std::map<std::string, std::string>& run_of_file);

}  // namespace ootci
