#pragma once
// The evidence store: runs, their manifests and per-variant results (docs/run.md), in SQLite.
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/run_status.h"
#include "evidence/test_result.h"

namespace ootci {

// An upstream file whose variants `ootci discover` ran, keyed by what makes evidence stale: the
// file's content and the backend's revision.
struct DiscoveredFile {
  std::string relpath;
  std::string file_hash;    // sha256 of the file's bytes
  std::string backend_rev;  // manifest backend revision (git describe --dirty, or tree digest)
  std::string run_id;       // the run that holds its results and ops
  int64_t discovered_ms = 0;
};

struct FileOutcomes {
  std::map<Outcome, int> counts;  // results per outcome
  double seconds = 0;
};

struct RunInfo {
  std::string id;
  std::string backend;
  std::string config_hash;
  std::string shard;  // "K/N" or ""
  RunStatus status = RunStatus::kRunning;
  std::optional<Conclusion> verdict;  // success or failure once finished
  int64_t started_ms = 0;
  int64_t ended_ms = 0;  // 0 while running
  nlohmann::json manifest = nlohmann::json::object();
  // Finished with a success verdict: what a baseline and a bisection's good end are made of.
  bool green() const { return status == RunStatus::kFinished && verdict == Conclusion::kSuccess; }
};

// How a probe finding in test_ops.input_probe begins when a shift failed the test ("held: ..."
// otherwise); `select changed --staged` keeps such a test in its first stage.
inline constexpr std::string_view kInputProbeFailed = "failed with its inputs shifted by ";
inline bool input_probe_failed(std::string_view finding) {
  return finding.starts_with(kInputProbeFailed);
}

class EvidenceStore {
 public:
  // Opens (creating and migrating) the database at `path`; parent folders are created.
  static std::unique_ptr<EvidenceStore> open(const std::string& path);
  virtual ~EvidenceStore() = default;

  virtual void begin_run(const RunInfo& run) = 0;
  // One committed transaction per call, so every result survives a kill. Re-recording a test id
  // in the same run replaces it.
  virtual void record(const std::string& run_id, const TestResult& result) = 0;
  // Drops one result, e.g. a whole-file error a resumed run is about to retry.
  virtual void forget(const std::string& run_id, const std::string& test_id) = 0;
  // Many results in one transaction (ingest).
  virtual void record_batch(const std::string& run_id, const std::vector<TestResult>& results) = 0;
  virtual void finish_run(const std::string& run_id, int64_t ended_ms, RunStatus status,
                          std::optional<Conclusion> verdict, const nlohmann::json& manifest) = 0;

  virtual std::optional<RunInfo> run(const std::string& run_id) = 0;
  // Removes a run with its results and ops (a helper run whose outcomes must not count, such as
  // discovery's recording pass). Discoveries naming it must be gone first.
  virtual void delete_run(const std::string& run_id) = 0;
  virtual std::vector<RunInfo> runs(const std::string& backend) = 0;  // newest first
  virtual std::vector<TestResult> results(const std::string& run_id) = 0;
  virtual std::set<std::string> finished_tests(const std::string& run_id) = 0;
  // The newest finished run with verdict success for this backend and config_hash.
  virtual std::optional<RunInfo> last_green_run(const std::string& backend,
                                                const std::string& config_hash) = 0;
  // A test's results across runs, newest first.
  virtual std::vector<TestResult> history(const std::string& test_id, int limit) = 0;
  // Mean duration per test id over its last `window` results in finished runs, and per file the
  // sum of those means.
  virtual std::map<std::string, double> test_durations(int window = 5) = 0;
  virtual std::map<std::string, double> file_durations(int window = 5) = 0;
  // The same over results whose test ran to an end (not an error, not a skip): how long a test
  // takes, which a crash or a timeout says nothing about (the run's test limits).
  virtual std::map<std::string, double> completed_durations(int window = 5) = 0;
  // Per test id: how often its newest `window` results in finished runs went from passing to
  // failing (failed or error right after a pass): the history of it catching a breakage. A test
  // that always fails never counts.
  virtual std::map<std::string, int> breakages(int window = 20) = 0;
  // Per file of one run: results per outcome and the summed duration (a trend point).
  virtual std::map<std::string, FileOutcomes> file_outcomes(const std::string& run_id) = 0;

  // Execution evidence (`ootci discover`). record()/record_batch() store a result's ops too.
  // Ops per test id of one run (tests without recorded ops are absent).
  virtual std::map<std::string, std::vector<std::string>> ops_of_run(const std::string& run_id) = 0;
  // "op:dtype" pairs per test id of one run (tests recorded without dtypes are absent).
  virtual std::map<std::string, std::vector<std::string>> op_dtypes_of_run(
      const std::string& run_id) = 0;
  // Those of them reached only while generating inputs, per test id (absent: none).
  virtual std::map<std::string, std::vector<std::string>> input_op_dtypes_of_run(
      const std::string& run_id) = 0;
  // Discovery's input probe per test id of one run: "held: ..." or what failed the test with
  // its inputs shifted (absent: not probed).
  virtual std::map<std::string, std::string> input_probes_of_run(const std::string& run_id) = 0;
  // Sets the input probe of tests that have ops in this run (others are left as they are).
  virtual void set_input_probes(const std::string& run_id,
                                const std::map<std::string, std::string>& probes) = 0;
  virtual void mark_discovered(const DiscoveredFile& file) = 0;
  // The discovery of this exact file content on this backend revision, if any.
  virtual std::optional<DiscoveredFile> discovered(const std::string& relpath,
                                                   const std::string& file_hash,
                                                   const std::string& backend_rev) = 0;
  // The newest discovery of every file ever discovered, by relpath.
  virtual std::vector<DiscoveredFile> latest_discoveries() = 0;
};

}  // namespace ootci
