#include "relay/redelivery.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/time.h"

namespace ootci {
namespace {

constexpr int64_t kRetryMs = 5000;    // after a 503, and after a pass that failed
constexpr int64_t kMinGapMs = 30000;  // between two requests for one delivery
constexpr int kMaxPages = 50;         // of 100 deliveries each, per pass
// A pass reads back to where the last one stopped, less this overlap: a delivery GitHub lists
// late (its answer took a while) is not passed over.
constexpr int64_t kOverlapMs = 120000;

bool relayed_event(const std::string& event) {
  return event == "pull_request" || event == "push" || event == "check_run" ||
         event == "check_suite";
}

// Whether the relay would have stored this webhook as a delivery (and so can tell it has it).
bool stored_as_delivery(const HookDelivery& d) {
  return d.event == "push" ||
         (d.event == "pull_request" && (d.action == "opened" || d.action == "reopened" ||
                                        d.action == "synchronize" || d.action == "closed"));
}

}  // namespace

std::vector<HookDelivery> redelivery_candidates(const std::vector<HookDelivery>& deliveries,
                                                int64_t now_ms, int64_t max_age_ms) {
  std::map<std::string, const HookDelivery*> newest;
  std::map<std::string, bool> answered;
  for (const auto& d : deliveries) {
    if (d.guid.empty()) continue;
    answered[d.guid] = answered[d.guid] || (d.status_code >= 200 && d.status_code < 300);
    auto& n = newest[d.guid];
    if (!n || d.delivered_ms > n->delivered_ms ||
        (d.delivered_ms == n->delivered_ms && d.id > n->id))
      n = &d;
  }
  std::vector<HookDelivery> out;
  for (const auto& [guid, d] : newest) {
    if (answered[guid] || !relayed_event(d->event) || d->delivered_ms < now_ms - max_age_ms)
      continue;
    if (d->status_code != 0 && d->status_code < 500) continue;
    out.push_back(*d);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.delivered_ms > b.delivered_ms; });
  return out;
}

Redeliverer::Redeliverer(Store& store, std::shared_ptr<GitHubApp> app, const RelayConfig& config,
                         Metrics& metrics)
    : store_(store),
      app_(std::move(app)),
      config_(config),
      metrics_(metrics),
      pool_([this] { return work_once(); },
            [this] {
              return std::clamp<int64_t>(next_pass_ms_ - now_ms(), 50,
                                         config_.redelivery.interval_s * 1000);
            }) {}

void Redeliverer::start() {
  if (!app_ || !config_.redelivery.enabled) return;
  // A relay that starts looks soon: it may have been down while GitHub delivered.
  next_pass_ms_ = now_ms() + 2000;
  pool_.start(1);
}

void Redeliverer::stop() {
  pool_.stop();
}

void Redeliverer::note_refused() {
  int64_t soon = now_ms() + kRetryMs;
  int64_t next = next_pass_ms_;
  while (soon < next && !next_pass_ms_.compare_exchange_weak(next, soon)) {
  }
  pool_.wake();
}

bool Redeliverer::work_once() {
  int64_t now = now_ms();
  if (now < next_pass_ms_) return false;
  try {
    Pass p = run_once(now);
    if (p.requested)
      spdlog::info("redelivery: asked GitHub to redeliver {} webhook(s)", p.requested);
    next_pass_ms_ = now + config_.redelivery.interval_s * 1000;
  } catch (const std::exception& e) {
    spdlog::warn("redelivery: {}; trying again in {} s", e.what(), kRetryMs / 1000);
    metrics_.inc("ootci_redeliveries_total", "outcome=\"pass_failed\"");
    next_pass_ms_ = now + kRetryMs;
  }
  return false;
}

std::vector<HookDelivery> Redeliverer::list_deliveries(int64_t now_ms) {
  std::vector<HookDelivery> out;
  // Back to max_age_s on the first pass, then to what the last pass saw.
  int64_t back_to =
      std::max(now_ms - config_.redelivery.max_age_s * 1000, scanned_until_ms_ - kOverlapMs);
  std::string cursor;
  static const std::regex next_link(R"(<[^>]*[?&]cursor=([^&>]+)[^>]*>;\s*rel="next")");
  for (int page = 0; page < kMaxPages; ++page) {
    std::string path = "/app/hook/deliveries?per_page=100";
    if (!cursor.empty()) path += "&cursor=" + cursor;
    HttpResult r = app_->app_call("GET", path);
    auto list = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !list.is_array())
      throw Error(fmt::format("GET /app/hook/deliveries: {}",
                              r.status ? "HTTP " + std::to_string(r.status) : r.error));
    int64_t oldest = INT64_MAX;
    for (const auto& d : list) {
      if (!d.is_object()) continue;
      HookDelivery h;
      h.id = d.value("id", int64_t{0});
      h.guid = d.value("guid", "");
      h.delivered_ms = parse_github_time(d.value("delivered_at", "")) * 1000;
      h.status_code = d["status_code"].is_number_integer() ? d["status_code"].get<int>() : 0;
      h.event = d.value("event", "");
      h.action = d["action"].is_string() ? d["action"].get<std::string>() : "";
      oldest = std::min(oldest, h.delivered_ms);
      out.push_back(std::move(h));
    }
    std::smatch m;
    std::string link = r.header("Link");
    if (list.empty() || oldest < back_to || !std::regex_search(link, m, next_link)) break;
    cursor = m[1].str();
  }
  return out;
}

Redeliverer::Pass Redeliverer::run_once(int64_t now) {
  Pass p;
  std::vector<HookDelivery> all = list_deliveries(now);
  p.listed = static_cast<int>(all.size());
  int64_t newest = 0;
  for (const auto& d : all) newest = std::max(newest, d.delivered_ms);
  // A webhook left for later (this pass's cap, a request too recent, a request that failed)
  // keeps the mark at it, so the next pass reads it again.
  int64_t mark = newest;
  for (const HookDelivery& d :
       redelivery_candidates(all, now, config_.redelivery.max_age_s * 1000)) {
    if (stored_as_delivery(d) && store_.outbox.get_delivery(d.guid, false)) {
      p.stored++;
      continue;
    }
    if (p.requested >= config_.redelivery.max_per_pass ||
        !store_.shared.claim_redelivery(d.guid, now, kMinGapMs, config_.redelivery.max_attempts)) {
      mark = std::min(mark, d.delivered_ms);
      continue;
    }
    HttpResult r = app_->app_call("POST", fmt::format("/app/hook/deliveries/{}/attempts", d.id));
    bool ok = r.status == 202 || r.status == 200;
    if (!ok) mark = std::min(mark, d.delivered_ms);
    metrics_.inc("ootci_redeliveries_total",
                 fmt::format("outcome=\"{}\"", ok ? "requested" : "failed"));
    if (ok)
      p.requested++;
    else
      spdlog::warn("redelivery of {} ({} {}): {}", d.guid, d.event, d.action,
                   r.status ? "HTTP " + std::to_string(r.status) : r.error);
  }
  // Only a pass that went through moves the mark: a failed one is read again in full.
  if (mark > scanned_until_ms_) scanned_until_ms_ = mark;
  return p;
}

}  // namespace ootci
