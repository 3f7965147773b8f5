#pragma once
// `ootci discover`: execution evidence (docs/select.md). Upstream test files run on the device
// with every variant mandatory, once plainly for each variant's raw outcome and once with the op
// recorder for the aten ops it called on the device; the evidence store keeps both in one run. A
// file is discovered again only when its content or the backend's revision changed.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend_config.h"
#include "backend/evidence_store.h"
#include "backend/runner.h"

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
// backend revision (all run when `force`).
struct StaleSplit {
  std::vector<DiscoveryCandidate> to_run;
  std::vector<DiscoveredFile> up_to_date;
};
StaleSplit split_stale(EvidenceStore& store, const std::vector<DiscoveryCandidate>& candidates,
                       const std::string& backend_rev, bool force);

// A plan (JSON v1) running every variant of these files in mandatory_success: no rules, no
// capability lists, so outcomes are the device's raw truth. The backend section is the backend's
// own (environment, fault switches, modules).
nlohmann::json discovery_plan(const BackendConfig& backend,
                              const std::vector<DiscoveryCandidate>& files);

// What one file's discovery found.
struct DiscoverySummary {
  std::string relpath;
  int variants = 0;                      // results of single tests
  std::map<std::string, int> outcomes;   // outcome -> variants
  std::vector<std::string> file_errors;  // whole-file errors (error_class: message head)
  size_t distinct_ops = 0;
};
std::vector<DiscoverySummary> summarize_discovery(
    const std::vector<DiscoveryCandidate>& files, const std::vector<TestResult>& results,
    const std::map<std::string, std::vector<std::string>>& ops_by_test);

struct DiscoverRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::vector<std::string> file_globs;
  bool force = false;
  int workers = 0;  // 0: run.workers
  bool tty = false;
};

struct DiscoverReport {
  std::string backend_rev;
  std::vector<DiscoveredFile> up_to_date;
  std::optional<RunReport> run;  // unset when every file was up to date
  std::vector<DiscoverySummary> files;
};

// Runs both passes and, when both finished, marks the files discovered. The recording pass's
// run is deleted once its ops are copied into the plain run.
DiscoverReport discover(const DiscoverRequest& request);

}  // namespace ootci
