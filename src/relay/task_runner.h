#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/metrics.h"
#include "github/app_client.h"
#include "relay/config.h"
#include "relay/transport.h"
#include "relay/worker_pool.h"
#include "relay_store/task_queue.h"

namespace ootci {

// Task kinds and payload builders. Every side effect that talks to GitHub or the HUD goes through
// the tasks table, so it survives a crash and is retried, and never blocks or fails a callback.
namespace task {
constexpr const char* kCheckRun = "check_run";      // POST /repos/{upstream}/check-runs
constexpr const char* kRerun = "rerun";             // POST /repos/{repo}/actions/runs/{id}/rerun*
constexpr const char* kHudForward = "hud_forward";  // POST {hud}/crcr/results

TaskItem make(const char* kind, const std::string& ordering_key, const nlohmann::json& payload,
              int64_t now_ms);
}  // namespace task

class TaskRunner {
 public:
  TaskRunner(TaskQueue& queue, std::shared_ptr<GitHubApp> app, const RelayConfig& config,
             Metrics& metrics);
  void start(int threads);
  void stop();
  void wake();
  // One attempt at one task, without the store update.
  SendResult run(const TaskItem& task);

 private:
  bool run_one();
  TaskQueue& queue_;
  std::shared_ptr<GitHubApp> app_;
  const RelayConfig& config_;
  Metrics& metrics_;
  std::string hud_key_;
  WorkerPool pool_;
};

}  // namespace ootci
