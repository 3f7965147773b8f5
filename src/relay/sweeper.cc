#include "relay/sweeper.h"

#include <spdlog/spdlog.h>

#include "base/time.h"
#include "relay/check_runs.h"
#include "relay/demotion.h"
#include "relay/hud_forward.h"
#include "relay/level_sync.h"

namespace ootci {

void Sweeper::start() {
  running_ = true;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (running_) {
      lock.unlock();
      try {
        int n = sweep_once(now_ms());
        if (n) spdlog::info("sweeper: timed out {} zombie job(s)", n);
        if (int64_t pruned = prune_once(now_ms()))
          spdlog::info("sweeper: pruned {} job row(s) past retention", pruned);
        lifecycle_once(now_ms());
      } catch (const std::exception& e) {
        spdlog::error("sweeper: {}", e.what());
      }
      lock.lock();
      cv_.wait_for(lock, std::chrono::seconds(config_.sweeper.interval_s),
                   [&] { return !running_; });
    }
  });
}

void Sweeper::stop() {
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int Sweeper::sweep_once(int64_t now) {
  int cleaned = 0;
  for (JobRecord j : store_.jobs.overdue_jobs(now - config_.sweeper.zombie_timeout_s * 1000, 500)) {
    j.status = JobStatus::kCompleted;
    j.conclusion = JobConclusion::kTimedOut;
    j.completed_ms = now;
    j.execution_time_ms = now - j.in_progress_ms;
    j.completed_hash.clear();
    // The HUD gets the stored in_progress body turned into a timed-out completion, as CRCR does.
    nlohmann::json body = nlohmann::json::parse(j.last_body, nullptr, false);
    if (body.is_object() && body["workflow"].is_object()) {
      body["workflow"]["status"] = to_string(j.status);
      body["workflow"]["conclusion"] = j.conclusion.text();
      body["workflow"]["completed_at"] = iso8601_utc(now);
    }
    std::vector<TaskItem> tasks;
    if (j.check_run_created) tasks.push_back(check_run_task(j, config_.upstream_repo, now));
    if (!config_.hud_forward.url.empty()) tasks.push_back(hud_forward_task(j, body, now));
    // The flag must not have changed since we read it: a label backfill racing the sweep would
    // otherwise lose its completed check run.
    if (store_.jobs.update_job(j, JobStatus::kInProgress, tasks, j.check_run_created)) cleaned++;
  }
  store_.shared.set_meta(kHeartbeatKey, std::to_string(now));
  metrics_.inc("ootci_sweeper_timed_out_total", "", cleaned);
  if (cleaned) tasks_.wake();
  return cleaned;
}

void Sweeper::lifecycle_once(int64_t now) {
  if (!app_ || !allowlist_) return;
  int64_t interval = config_.sync_levels.interval_s;
  // A little early, so a pass every interval_s seconds is not skipped for a few milliseconds.
  if (interval > 0 && store_.shared.run_due("sync_levels", now, interval * 1000 - 1000)) {
    SyncReport r = sync_levels(*app_, store_, config_, now);
    for (const auto& d : r.done) spdlog::info("sync-levels: {}", d);
    for (const auto& f : r.failed) spdlog::error("sync-levels: {}", f);
    metrics_.inc("ootci_sync_levels_total", r.ok() ? "outcome=\"ok\"" : "outcome=\"failed\"");
  }
  // After the sync, so a PR it opened holds back check runs from this pass on.
  reconcile_demotions(store_.levels, *app_, *allowlist_, config_, now);
}

int64_t Sweeper::prune_once(int64_t now) {
  // Small transactions: a callback waits for the store's write lock at most one batch long.
  constexpr int kBatch = 2000;
  if (config_.sweeper.job_retention_days <= 0) return 0;
  int64_t before = now - config_.sweeper.job_retention_days * 86400000;
  int64_t total = 0;
  for (int64_t n = kBatch; n == kBatch;) {
    n = store_.jobs.prune_jobs(before, kBatch);
    total += n;
  }
  metrics_.inc("ootci_sweeper_pruned_total", "", total);
  return total;
}

}  // namespace ootci
