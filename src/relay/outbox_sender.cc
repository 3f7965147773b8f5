#include "relay/outbox_sender.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "base/time.h"

namespace ootci {
namespace {

constexpr size_t kBodyCacheSize = 256;
constexpr int64_t kIdlePollMs = 500;  // other replicas may add rows we are not woken for
constexpr int kMaxClaim = 64;         // rows per claim, so one transaction stays short
constexpr int64_t kDueCacheMs = 100;  // how long idle workers share one answer of next_due_ms

uint64_t random_u64() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng();
}

}  // namespace

std::string build_client_payload(const std::string& event_type, const std::string& delivery_id,
                                 const std::string& raw_body, const std::string& callback_token) {
  return fmt::format(R"({{"event_type":{},"delivery_id":{},"payload":{},"callback_token":{}}})",
                     nlohmann::json(event_type).dump(), nlohmann::json(delivery_id).dump(),
                     raw_body, nlohmann::json(callback_token).dump());
}

OutboxSender::OutboxSender(OutboxStore& outbox, TransportRouter& router, DispatchPolicy policy,
                           Metrics& metrics)
    : outbox_(outbox),
      router_(router),
      policy_(policy),
      metrics_(metrics),
      pool_([this] { return deliver_one(); }, [this] { return idle_wait_ms(); }) {}

OutboxSender::~OutboxSender() {
  stop();
}

void OutboxSender::start() {
  pool_.start(policy_.workers);
}
void OutboxSender::stop() {
  pool_.stop();
}
void OutboxSender::wake() {
  pool_.wake();
}

int64_t OutboxSender::backoff_ms(const DispatchPolicy& p, int attempts, uint64_t random) {
  int shift = std::min(attempts - 1, 30);
  int64_t base = std::min(p.max_backoff_ms, p.initial_backoff_ms << shift);
  // "Equal jitter": half fixed, half random, so retries from a burst spread out.
  int64_t half = std::max<int64_t>(base / 2, 1);
  return base - half + static_cast<int64_t>(random % static_cast<uint64_t>(half + 1));
}

std::shared_ptr<const std::string> OutboxSender::delivery_body(const std::string& delivery_id) {
  {
    std::lock_guard lock(cache_mu_);
    auto it = body_cache_.find(delivery_id);
    if (it != body_cache_.end()) return it->second;
  }
  auto d = outbox_.get_delivery(delivery_id);
  if (!d) return nullptr;
  auto body = std::make_shared<const std::string>(std::move(d->body));
  std::lock_guard lock(cache_mu_);
  if (body_cache_.emplace(delivery_id, body).second) {
    cache_order_.push_back(delivery_id);
    if (cache_order_.size() > kBodyCacheSize) {
      body_cache_.erase(cache_order_.front());
      cache_order_.pop_front();
    }
  }
  return body;
}

SendResult OutboxSender::attempt(const OutboxItem& item, bool allow_retry) {
  SendResult r;
  OutboxOutcome o = try_once(item, allow_retry, &r);
  settle({o});
  return r;
}

OutboxOutcome OutboxSender::try_once(const OutboxItem& item, bool allow_retry, SendResult* out) {
  int attempts = item.attempts + 1;
  SendResult& r = *out;
  auto body = delivery_body(item.delivery_id);
  if (!body) {
    r.error = "delivery record is missing";
  } else {
    try {
      r = router_.for_repo(item.repo).send(
          item.repo, item.event_type, item.delivery_id,
          build_client_payload(item.event_type, item.delivery_id, *body, item.callback_token));
    } catch (const std::exception& e) {  // counted as a failed attempt, so the row still ends
      r = SendResult{};
      r.retryable = true;
      r.error = e.what();
    }
  }
  int64_t now = now_ms();
  if (r.delivered) return {OutboxOutcome::kDelivered, item, attempts, now, ""};
  int64_t next = now + backoff_ms(policy_, attempts, random_u64());
  if (r.retry_after_s)
    next = std::max(next, now + std::min<int64_t>(*r.retry_after_s, 86400) * 1000);
  bool give_up =
      !allow_retry || !r.retryable || attempts >= policy_.max_attempts || next > item.deadline_ms;
  if (!give_up) return {OutboxOutcome::kRetry, item, attempts, next, r.error};
  std::string why = !r.retryable                       ? "permanent error"
                    : !allow_retry                     ? "no retry (synchronous mode)"
                    : attempts >= policy_.max_attempts ? "max_attempts reached"
                                                       : "deadline passed";
  return {OutboxOutcome::kFailed, item, attempts, now,
          fmt::format("{} after {} attempt(s): {}", why, attempts, r.error)};
}

void OutboxSender::settle(const std::vector<OutboxOutcome>& outcomes) {
  std::vector<bool> applied = outbox_.settle_outbox(outcomes);
  int64_t now = now_ms();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const OutboxOutcome& o = outcomes[i];
    const OutboxItem& item = o.item;
    if (!applied[i]) {
      // The attempt outlived its lease and another worker (of any replica) took the row over:
      // that worker records the outcome. A delivery here may then be sent twice (at least once).
      metrics_.inc("ootci_dispatch_leases_lost_total", "");
      spdlog::warn(
          "dispatch {} → {}: the lease ran out during the attempt; another worker owns the row",
          item.delivery_id, item.repo);
      if (o.kind != OutboxOutcome::kDelivered) continue;
    }
    switch (o.kind) {
      case OutboxOutcome::kDelivered:
        metrics_.inc("ootci_dispatches_total", "outcome=\"delivered\"");
        metrics_.observe("ootci_webhook_to_dispatch_seconds",
                         std::max<int64_t>(0, o.at_ms - item.created_ms) / 1000.0);
        break;
      case OutboxOutcome::kRetry:
        note_due(o.at_ms);
        metrics_.inc("ootci_dispatches_total", "outcome=\"retried\"");
        spdlog::info("dispatch {} → {} will retry in {} ms: {}", item.delivery_id, item.repo,
                     o.at_ms - now, o.error);
        break;
      case OutboxOutcome::kFailed:
        metrics_.inc("ootci_dispatches_total", "outcome=\"failed\"");
        spdlog::warn("dispatch {} → {} failed: {}", item.delivery_id, item.repo, o.error);
        break;
    }
  }
}

// Workers share two batches so that the store sees few transactions however many workers there
// are: one claims due rows for every idle worker at once, and one settles the outcomes that the
// others finished while the previous commit ran (a group commit).
bool OutboxSender::deliver_one() {
  std::optional<OutboxItem> item = next_item();
  if (!item) return false;
  SendResult r;
  OutboxOutcome o = try_once(*item, true, &r);
  std::vector<OutboxOutcome> batch;
  {
    std::lock_guard lock(batch_mu_);
    settled_.push_back(std::move(o));
    if (settling_) return true;  // the settling worker takes ours too
    settling_ = true;
  }
  // Clears settling_ however this ends: a failed commit leaves its rows leased, and they come
  // back when the lease runs out, so nothing more is owed here.
  struct Done {
    OutboxSender* s;
    ~Done() {
      std::lock_guard lock(s->batch_mu_);
      s->settling_ = false;
    }
  } done{this};
  for (;;) {
    {
      std::lock_guard lock(batch_mu_);
      batch.swap(settled_);
      settled_.clear();
    }
    if (batch.empty()) return true;
    metrics_.inc("ootci_dispatch_commits_total", "");
    settle(batch);
    batch.clear();
  }
}

// Idle workers sleep until the earliest due row. A burst wakes every worker at once, so they
// share one answer from the store for kDueCacheMs; a claim that found fewer due rows than it
// asked for makes the next idle worker ask again, and this relay's own retries lower it.
int64_t OutboxSender::idle_wait_ms() {
  int64_t now = now_ms();
  std::lock_guard lock(due_mu_);
  if (now - due_checked_ms_ >= kDueCacheMs) {
    due_ms_ = outbox_.next_due_ms();  // under the lock: the others wait for it, not ask too
    due_checked_ms_ = now;
  }
  return due_ms_ ? std::clamp<int64_t>(*due_ms_ - now, 0, kIdlePollMs) : kIdlePollMs;
}

void OutboxSender::note_due(std::optional<int64_t> due_ms) {
  std::lock_guard lock(due_mu_);
  if (!due_ms)
    due_checked_ms_ = 0;
  else if (!due_ms_ || *due_ms < *due_ms_)
    due_ms_ = due_ms;
}

// A row already claimed, or a fresh claim of up to one row per worker: one transaction feeds
// them all. A claimed row waits in memory for about one attempt at most.
std::optional<OutboxItem> OutboxSender::next_item() {
  std::unique_lock lock(batch_mu_);
  if (ready_.empty()) {
    if (claiming_) return std::nullopt;  // the claiming worker will wake us
    claiming_ = true;
    int want = std::min(policy_.workers, kMaxClaim);
    lock.unlock();
    // A lease outlives the slowest attempt (installation lookup, token, dispatch: three
    // requests), so a row is never sent twice concurrently, yet comes back soon after a crash.
    const int64_t lease_ms = policy_.request_timeout_ms * 3 + 2000;
    std::vector<OutboxItem> items;
    try {
      items = outbox_.claim_due(now_ms(), want, lease_ms);
    } catch (...) {
      std::lock_guard relock(batch_mu_);
      claiming_ = false;
      throw;
    }
    if (!items.empty()) metrics_.inc("ootci_dispatch_claims_total", "");
    if (static_cast<int>(items.size()) < want) note_due(std::nullopt);
    lock.lock();
    claiming_ = false;
    for (auto& it : items) ready_.push_back(std::move(it));
    if (ready_.size() > 1) pool_.wake();
  }
  while (!ready_.empty()) {
    OutboxItem item = std::move(ready_.front());
    ready_.pop_front();
    // A claimed row's next_attempt_ms is its lease's end. Sent only with a whole attempt's time
    // left, so it is never sent twice at once; otherwise it comes back when the lease runs out.
    if (item.next_attempt_ms - now_ms() >= policy_.request_timeout_ms * 3) return item;
  }
  return std::nullopt;
}

}  // namespace ootci
