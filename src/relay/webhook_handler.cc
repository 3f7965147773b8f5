#include "relay/webhook_handler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <set>

#include "base/text.h"
#include "base/time.h"
#include "net/crypto.h"
#include "relay/check_runs.h"
#include "relay/demotion.h"

namespace ootci {
namespace {

const char* kLabelPrefix = "ciflow/crcr/";

// GitHub's fields as the relay reads them: a field of another type reads as absent, never as an
// exception out of the handler (json::value throws on a type mismatch).
std::string str_at(const nlohmann::json& j, const nlohmann::json::json_pointer& p) {
  if (!j.contains(p)) return "";
  const auto& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

int64_t int_at(const nlohmann::json& j, const nlohmann::json::json_pointer& p) {
  if (!j.contains(p)) return 0;
  const auto& v = j.at(p);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

bool has_label(const nlohmann::json& payload, const std::string& name) {
  auto p = "/pull_request/labels"_json_pointer;
  if (!payload.contains(p) || !payload.at(p).is_array()) return false;
  for (const auto& l : payload.at(p))
    if (str_at(l, "/name"_json_pointer) == name) return true;
  return false;
}

}  // namespace

std::string head_sha_of(const nlohmann::json& payload) {
  std::string sha = str_at(payload, "/pull_request/head/sha"_json_pointer);
  return sha.empty() ? str_at(payload, "/after"_json_pointer) : sha;
}

WebhookHandler::WebhookHandler(const RelayConfig& config, std::string secret, Store& store,
                               AllowlistSource& allowlist, OutboxSender& outbox_sender,
                               Metrics& metrics, const CallbackTokens& tokens, TaskRunner& tasks)
    : config_(config),
      secret_(std::move(secret)),
      store_(store),
      allowlist_(allowlist),
      outbox_sender_(outbox_sender),
      metrics_(metrics),
      tokens_(tokens),
      tasks_(tasks) {}

Reply WebhookHandler::handle(const WebhookRequest& req) {
  static const char* kEvents[] = {"pull_request", "push", "check_run", "check_suite"};
  if (std::find(std::begin(kEvents), std::end(kEvents), req.event) == std::end(kEvents)) {
    metrics_.inc("ootci_webhooks_total", "event=\"other\",result=\"ignored\"");
    return json_reply(200, {{"ignored", true}});
  }
  if (req.signature.empty()) return detail_reply(400, "No signature");
  if (!constant_time_equal(req.signature, github_signature(secret_, req.body))) {
    metrics_.inc("ootci_webhooks_total", "event=\"" + req.event + "\",result=\"bad_signature\"");
    return detail_reply(401, "Bad signature");
  }
  nlohmann::json payload = nlohmann::json::parse(req.body, nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) return detail_reply(400, "Invalid JSON");
  std::string repo = str_at(payload, "/repository/full_name"_json_pointer);
  if (lower(repo) != lower(config_.upstream_repo)) {
    metrics_.inc("ootci_webhooks_total", "event=\"" + req.event + "\",result=\"ignored\"");
    return json_reply(200, {{"ignored", true}});
  }
  metrics_.inc("ootci_webhooks_total", "event=\"" + req.event + "\",result=\"accepted\"");
  std::string action = str_at(payload, "/action"_json_pointer);
  if (req.event == "push") return dispatch(req, payload);
  if (req.event == "pull_request") {
    if (action == "opened" || action == "reopened" || action == "synchronize" || action == "closed")
      return dispatch(req, payload);
    if (action == "labeled" &&
        str_at(payload, "/label/name"_json_pointer).rfind(kLabelPrefix, 0) == 0)
      return record_label(payload);
    return json_reply(200, {{"ignored", true}});
  }
  if (action == "rerequested") return rerun_requested(req.event, payload);
  return json_reply(200, {{"ignored", true}});
}

Reply WebhookHandler::dispatch(const WebhookRequest& req, const nlohmann::json& payload) {
  if (req.delivery.empty()) return detail_reply(400, "Missing X-GitHub-Delivery");
  std::shared_ptr<const Allowlist> allow;
  try {
    allow = allowlist_.get();
  } catch (const std::exception& e) {
    spdlog::error("allowlist unavailable: {}", e.what());
    return detail_reply(503, "Allowlist unavailable");
  }
  int64_t now = now_ms();
  std::string sha = head_sha_of(payload);
  DeliveryRecord d;
  d.delivery_id = req.delivery;
  d.event = req.event;
  d.action = str_at(payload, "/action"_json_pointer);
  d.head_sha = sha;
  d.pr_number = int_at(payload, "/pull_request/number"_json_pointer);
  d.received_ms = now;
  d.body = req.body;

  std::vector<OutboxItem> rows;
  for (const std::string& target : allow->targets()) {
    // Participation (test-infra#8856): a repo whose `events:` leave this event out gets none.
    if (!allow->find(target)->takes_part_in(req.event)) continue;
    OutboxItem o;
    o.repo = target;
    o.event_type = req.event;
    o.callback_token = tokens_.mint(req.delivery, target, sha, now / 1000);
    o.created_ms = now;
    o.next_attempt_ms = now;
    o.deadline_ms = now + config_.dispatch.deadline_s * 1000;
    rows.push_back(std::move(o));
  }
  // L4 always wants check runs; L3 when the PR already carries its device label (CRCR §1.3 7d).
  if (req.event == "pull_request" && !sha.empty()) {
    for (const auto& e : allow->entries()) {
      if (!e.takes_part_in(req.event)) continue;
      if (e.level == Level::kL4 ||
          (e.level == Level::kL3 && has_label(payload, kLabelPrefix + e.device)))
        d.check_run_repos.push_back(e.repo);
    }
  }
  if (!store_.outbox.accept_delivery(d, rows)) {
    metrics_.inc("ootci_webhooks_total", "event=\"" + req.event + "\",result=\"redelivery\"");
    return json_reply(200, {{"ok", true},
                            {"duplicate", true},
                            {"dispatched", nlohmann::json::array()},
                            {"failed", nlohmann::json::array()}});
  }
  nlohmann::json dispatched = nlohmann::json::array(), failed = nlohmann::json::array();
  if (!config_.dispatch.synchronous) {
    outbox_sender_.wake();
    for (const auto& r : rows) dispatched.push_back({{"repo", r.repo}});
    return json_reply(
        200, {{"ok", true}, {"dispatched", dispatched}, {"failed", failed}, {"queued", true}});
  }
  // Baseline: fan out inside the request, one attempt each, at most 32 at a time (CRCR's pool).
  std::vector<OutboxItem> items = store_.outbox.outbox_for(req.delivery);
  std::vector<SendResult> results(items.size());
  for (size_t start = 0; start < items.size(); start += 32) {
    std::vector<std::future<void>> batch;
    for (size_t i = start; i < std::min(items.size(), start + 32); ++i)
      batch.push_back(std::async(std::launch::async,
                                 [&, i] { results[i] = outbox_sender_.attempt(items[i], false); }));
    for (auto& f : batch) f.get();
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (results[i].delivered)
      dispatched.push_back({{"repo", items[i].repo}});
    else
      failed.push_back({{"repo", items[i].repo}, {"error", results[i].error}});
  }
  if (!items.empty() && dispatched.empty())
    return json_reply(
        502, {{"ok", false}, {"detail", "No downstream dispatch succeeded"}, {"failed", failed}});
  return json_reply(200, {{"ok", true}, {"dispatched", dispatched}, {"failed", failed}});
}

Reply WebhookHandler::record_label(const nlohmann::json& payload) {
  std::string device =
      str_at(payload, "/label/name"_json_pointer).substr(std::string(kLabelPrefix).size());
  std::string sha = head_sha_of(payload);
  std::vector<std::string> repos = allowlist_.get()->l3_repos_for_device(device);
  int backfilled = 0;
  if (!sha.empty()) {
    int64_t now = now_ms();
    // Scenario 1 (label before the callbacks): the flag makes later callbacks create them. Set
    // before reading the jobs, so a job either sees the flag or is seen by the backfill.
    for (const auto& repo : repos) store_.outbox.set_check_run_wanted(sha, repo, now);
    std::vector<JobRecord> jobs = store_.jobs.jobs_for_sha(sha);
    for (const auto& repo : repos) {
      // A label is "now": during a pending demotion it adds no check run.
      if (check_runs_suppressed(Level::kL3, store_.levels.demotion(repo), std::nullopt)) continue;
      // Scenarios 2 and 3 (label while running, or after completion): backfill from the jobs.
      for (const JobRecord& listed : jobs) {
        if (listed.repo != repo || listed.event_type != "pull_request") continue;
        // A callback may move the job meanwhile: re-read and retry, so no backfill is lost.
        for (int round = 0; round < 3; ++round) {
          auto j = round == 0 ? std::optional<JobRecord>(listed) : store_.jobs.get_job(listed.key);
          if (!j || j->check_run_created) break;
          JobRecord next = *j;
          next.check_run_created = true;
          if (store_.jobs.update_job(next, j->status,
                                     {check_run_task(next, config_.upstream_repo, now)}, false)) {
            backfilled++;
            break;
          }
        }
      }
    }
  }
  if (backfilled) tasks_.wake();
  return json_reply(200, {{"ok", true},
                          {"status", "label_recorded"},
                          {"device", device},
                          {"repos", repos},
                          {"check_runs_backfilled", backfilled}});
}

Reply WebhookHandler::rerun_requested(const std::string& event, const nlohmann::json& payload) {
  auto allow = allowlist_.get();
  std::set<std::pair<std::string, int64_t>> runs;
  // Only GitHub Actions runs (integer ids) can be re-run through GitHub's API.
  auto add = [&](const std::string& repo, const std::string& run_id) {
    if (run_id.empty() || run_id.size() > 15 ||
        run_id.find_first_not_of("0123456789") != std::string::npos)
      return;
    int64_t id = std::stoll(run_id);
    if (id > 0 && allow->level_of(repo) >= Level::kL3) runs.insert({repo, id});
  };
  if (event == "check_run") {
    // Name crcr/<owner>/<repo>/<workflow>/<job>; external_id "<run_id>:<pr>".
    std::string name = str_at(payload, "/check_run/name"_json_pointer);
    std::string external = str_at(payload, "/check_run/external_id"_json_pointer);
    if (name.rfind("crcr/", 0) != 0) return json_reply(200, {{"ignored", true}});
    size_t a = name.find('/', 5), b = a == std::string::npos ? a : name.find('/', a + 1);
    std::string repo = name.substr(5, b == std::string::npos ? std::string::npos : b - 5);
    add(repo, external.substr(0, external.find(':')));
  } else {
    // Re-run all: every job with a check run on this commit, one full /rerun per (repo, run).
    for (const JobRecord& j :
         store_.jobs.jobs_for_sha(str_at(payload, "/check_suite/head_sha"_json_pointer)))
      if (j.check_run_created) add(j.repo, j.run_id);
  }
  std::vector<TaskItem> tasks;
  nlohmann::json queued = nlohmann::json::array();
  int64_t now = now_ms();
  for (const auto& [repo, run_id] : runs) {
    nlohmann::json p = {{"repo", repo}, {"run_id", run_id}, {"all_jobs", event == "check_suite"}};
    tasks.push_back(task::make(task::kRerun, fmt::format("rerun:{}:{}", repo, run_id), p, now));
    queued.push_back({{"repo", repo}, {"run_id", run_id}});
  }
  store_.tasks.enqueue_tasks(tasks);
  if (!tasks.empty()) tasks_.wake();
  return json_reply(200, {{"ok", true}, {"status", "rerun_queued"}, {"runs", queued}});
}

}  // namespace ootci
