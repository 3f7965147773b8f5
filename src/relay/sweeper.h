#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/metrics.h"
#include "github/app_client.h"
#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay/task_runner.h"
#include "relay_store/store.h"

namespace ootci {

// Times out zombie jobs: in_progress longer than zombie_timeout_s become completed/timed_out,
// with a completed check run (if they had one) and a HUD update. Its heartbeat is stored, so
// /healthz and /metrics show a stuck sweeper (CRCR's blind spot, test-infra#8800). It also prunes
// job rows older than job_retention_days (the HUD's rollups keep their counts), and keeps the
// pending demotions in step with GitHub.
class Sweeper {
 public:
  static constexpr const char* kHeartbeatKey = "sweeper_heartbeat_ms";

  Sweeper(Store& store, const RelayConfig& config, TaskRunner& tasks, Metrics& metrics)
      : store_(store), config_(config), tasks_(tasks), metrics_(metrics) {}
  // The level lifecycle's part of a pass: pending demotions are reconciled with GitHub, and
  // demotion PRs synced when sync_levels.interval_s is set (by one replica per interval). Needs
  // the GitHub App; without one the sweeper only times out and prunes.
  void set_level_lifecycle(AllowlistSource* allowlist, std::shared_ptr<GitHubApp> app) {
    allowlist_ = allowlist;
    app_ = std::move(app);
  }
  ~Sweeper() { stop(); }
  void start();
  void stop();
  // One pass; returns how many jobs it timed out.
  int sweep_once(int64_t now_ms);
  // Deletes completed jobs created before now - job_retention_days, a batch per transaction;
  // returns how many.
  int64_t prune_once(int64_t now_ms);
  // Reconciles demotions and, when due, syncs demotion PRs.
  void lifecycle_once(int64_t now_ms);

 private:
  Store& store_;
  const RelayConfig& config_;
  TaskRunner& tasks_;
  Metrics& metrics_;
  AllowlistSource* allowlist_ = nullptr;
  std::shared_ptr<GitHubApp> app_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;
};

}  // namespace ootci
