#pragma once
// The run's worker threads: each takes the next file of the plan and works through its attempts
// (run/file_attempts.h) as pytest processes, forked from the file's server or spawned, under the
// device pool's admission; every result goes to the store as it finishes (docs/run.md).
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "run/file_attempts.h"
#include "run/fork_server.h"
#include "run/pool_gate.h"
#include "run/progress.h"
#include "run/runner.h"
#include "run/test_limits.h"

namespace ootci {

// Runs the plan's files on worker threads; every result goes to the store as it finishes.
class FileWorkers {
 public:
  // `finished`: tests settled already (a resumed run's); `env`: every test process's.
  FileWorkers(const RunRequest& req, EvidenceStore& store, std::string run_id, std::string run_dir,
              std::map<std::string, std::string> env, std::set<std::string> finished,
              TestLimits limits);

  // Every file was worked through to its end (a stop may still have come in afterwards).
  bool all_done() const { return files_finished_ == files_total_; }
  // A stop came in before every file was worked through: the run is interrupted.
  bool stopped_early() const { return stop_ && !all_done(); }

  // Called again for a second stage: all_done() is about the latest call.
  void run(std::vector<PlanFile> files, Progress& progress);

 private:
  // The worker's processes for one file: its fork server (run.isolation: fork, from the first
  // attempt) and its devices under a pool.
  struct FileProcesses {
    std::unique_ptr<ForkServer> fork_server;
    std::string devices;
  };

  void record(TestResult r);

  void run_file(const PlanFile& f, FileProcesses& procs);

  // One attempt as a pytest process: forked from the file's server or spawned, under the device
  // pool's admission.
  PytestOutcome start_pytest(const PlanFile& f, FileProcesses& procs, const AttemptTests& tests,
                             const ResultSink& on_result);

  const RunRequest& req_;
  const std::atomic<bool>& stop_;
  EvidenceStore& store_;
  std::string run_id_;
  std::string run_dir_;
  std::map<std::string, std::string> env_;
  std::set<std::string> finished_;
  std::mutex store_mutex_;
  std::atomic<int> attempt_counter_{0};
  PoolGate pool_;  // run.devices
  std::atomic<size_t> files_finished_{0};
  size_t files_total_ = 0;
  Progress* progress_ = nullptr;
  TestLimits limits_;
};

}  // namespace ootci
