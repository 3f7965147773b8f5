#include "relay/task_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "base/error.h"
#include "base/time.h"
#include "relay/outbox_sender.h"

namespace ootci {

TaskItem task::make(const char* kind, const std::string& ordering_key,
                    const nlohmann::json& payload, int64_t now_ms) {
  TaskItem t;
  t.kind = kind;
  t.ordering_key = ordering_key;
  t.payload = payload.dump();
  t.created_ms = now_ms;
  t.next_attempt_ms = now_ms;
  return t;
}

TaskRunner::TaskRunner(TaskQueue& queue, std::shared_ptr<GitHubApp> app, const RelayConfig& config,
                       Metrics& metrics)
    : queue_(queue),
      app_(std::move(app)),
      config_(config),
      metrics_(metrics),
      pool_([this] { return run_one(); }, [] { return int64_t{500}; }) {
  if (!config_.hud_forward.url.empty()) {
    const char* key = std::getenv(config_.hud_forward.key_env.c_str());
    if (!key || !*key)
      throw Error(fmt::format("{}: hud_forward.key_env: environment variable {} is not set",
                              config_.path, config_.hud_forward.key_env));
    hud_key_ = key;
  }
}

void TaskRunner::start(int threads) {
  pool_.start(threads);
}
void TaskRunner::stop() {
  pool_.stop();
}
void TaskRunner::wake() {
  pool_.wake();
}

SendResult TaskRunner::run(const TaskItem& t) {
  auto p = nlohmann::json::parse(t.payload);
  SendResult fail;
  if (t.kind == task::kHudForward) {
    if (config_.hud_forward.url.empty()) return SendResult{true, false, 0, "", std::nullopt};
    HttpRequest req;
    req.method = "POST";
    req.url = config_.hud_forward.url + "/crcr/results";
    req.timeout_ms = 10000;  // CRCR's per-attempt HUD timeout
    req.body = p.dump();
    req.headers = {{"x-hud-internal-bot", hud_key_}, {"User-Agent", "ootci-relay"}};
    return classify_http(http_send(req));
  }
  if (!app_) {
    fail.error = "no GitHub App configured (github.app_id and github.private_key_file)";
    return fail;
  }
  if (t.kind == task::kCheckRun) {
    std::string upstream = p.at("upstream_repo");
    p.erase("upstream_repo");
    return classify_http(
        app_->call(upstream, "POST", "/repos/" + upstream + "/check-runs", p.dump()));
  }
  if (t.kind == task::kRerun) {
    std::string repo = p.at("repo");
    std::string path =
        fmt::format("/repos/{}/actions/runs/{}/{}", repo, p.at("run_id").get<int64_t>(),
                    p.value("all_jobs", false) ? "rerun" : "rerun-failed-jobs");
    HttpResult r = app_->call(repo, "POST", path, "{}");
    // GitHub answers 403 when the run is already running again: nothing left to do (as CRCR).
    if (r.status == 403 && r.body.find("already running") != std::string::npos) r.status = 204;
    return classify_http(r);
  }
  fail.error = "unknown task kind " + t.kind;
  return fail;
}

bool TaskRunner::run_one() {
  int64_t lease_ms = config_.dispatch.request_timeout_ms * 3 + 2000;
  auto tasks = queue_.claim_tasks(now_ms(), 1, lease_ms);
  for (const TaskItem& t : tasks) {
    SendResult r = run(t);
    int attempts = t.attempts + 1;
    std::string labels = fmt::format("kind=\"{}\",outcome=\"{}\"", t.kind,
                                     r.delivered   ? "done"
                                     : r.retryable ? "retried"
                                                   : "failed");
    if (r.delivered) {
      queue_.complete_task(t, attempts);
    } else if (r.retryable && attempts < config_.dispatch.max_attempts) {
      thread_local std::mt19937_64 rng(std::random_device{}());
      int64_t delay = OutboxSender::backoff_ms(config_.dispatch, attempts, rng());
      if (r.retry_after_s)
        delay = std::max(delay, std::min<int64_t>(*r.retry_after_s, 86400) * 1000);
      queue_.retry_task(t, attempts, now_ms() + delay, r.error);
    } else {
      if (r.retryable) labels = fmt::format("kind=\"{}\",outcome=\"failed\"", t.kind);
      // Best effort by design: logged, counted, kept in the table for inspection.
      spdlog::warn("task {} ({}) failed after {} attempt(s): {}", t.id, t.kind, attempts, r.error);
      queue_.fail_task(t, attempts, r.error);
    }
    metrics_.inc("ootci_tasks_total", labels);
  }
  return !tasks.empty();
}

}  // namespace ootci
