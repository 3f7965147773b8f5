#pragma once
// `ootci run`: runs a resolved plan's upstream test files on the device, isolates crashes and
// hangs, reruns failures, and records every result in the evidence store as it finishes.
#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/backend_config.h"
#include "backend/evidence.h"

namespace ootci {

// What to run: whole files and single tests (ids), from `--select FILE` (docs/run.md).
struct Selection {
  std::set<std::string> files;  // relpaths
  std::set<std::string> tests;  // test ids
};
Selection load_selection(const std::string& path);

struct RunRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::optional<Selection> selection;
  int shard = 0, shards = 0;  // run shard K of N when shards > 0
  int workers = 0;            // 0: backend.run.workers
  std::string resume_run;     // continue this run instead of starting one
  std::string run_id;         // the new run's id (default: new_run_id), e.g. chosen by the agent
  bool tty = false;           // a live progress line instead of periodic plain lines
};

struct RunReport {
  std::string run_id;
  std::string status;   // finished | interrupted
  std::string verdict;  // success | failure
  std::string junit_path;
  std::string manifest_path;
  std::vector<TestResult> results;
};

// Set from a signal handler to stop early: the children are killed and the run is marked
// interrupted, resumable with --resume.
extern std::atomic<bool> g_run_stop;

RunReport run_plan(const RunRequest& request);

}  // namespace ootci
