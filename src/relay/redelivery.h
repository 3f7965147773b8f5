#pragma once
// No webhook lost to a 503. GitHub does not redeliver a webhook the relay did not answer 2xx (the
// store was unavailable, or the relay was down): it only lists it among the App's hook
// deliveries. The relay looks there itself, once the store is back and every interval_s, and asks
// GitHub to redeliver what it has not stored: GET /app/hook/deliveries, then
// POST /app/hook/deliveries/{id}/attempts. Bounded (max_age_s, max_per_pass, max_attempts per
// delivery; a pass reads back to where the last one stopped, at most 50 pages) and idempotent: a
// delivery the store holds is never asked for, and the redelivery itself is deduplicated like any
// other (same X-GitHub-Delivery).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "github/app_client.h"
#include "relay/config.h"
#include "relay/worker_pool.h"
#include "relay_store/store.h"

namespace ootci {

// One attempt GitHub made to deliver a webhook to the App.
struct HookDelivery {
  int64_t id = 0;
  std::string guid;  // X-GitHub-Delivery; the same for every attempt of one webhook
  int64_t delivered_ms = 0;
  int status_code = 0;  // 0: no answer (the relay was down or too slow)
  std::string event;
  std::string action;
};

// The webhooks worth asking for again, each as its newest attempt, newest first: events the relay
// takes (pull_request, push, check_run, check_suite), delivered within max_age_ms, never answered
// 2xx, last answered 5xx or not at all (a 4xx, such as a bad signature, would fail again).
std::vector<HookDelivery> redelivery_candidates(const std::vector<HookDelivery>& deliveries,
                                                int64_t now_ms, int64_t max_age_ms);

class Redeliverer {
 public:
  Redeliverer(Store& store, std::shared_ptr<GitHubApp> app, const RelayConfig& config,
              Metrics& metrics);
  ~Redeliverer() { stop(); }
  void start();
  void stop();
  // The relay answered a webhook 503: look again in five seconds (the Retry-After it sent), and
  // every five seconds until a pass succeeds.
  void note_refused();

  struct Pass {
    int listed = 0;     // delivery attempts read
    int stored = 0;     // candidates the store already holds (nothing to do)
    int requested = 0;  // redeliveries asked for
  };
  // One pass; throws when the store or GitHub cannot be read.
  Pass run_once(int64_t now_ms);

 private:
  std::vector<HookDelivery> list_deliveries(int64_t now_ms);
  bool work_once();

  Store& store_;
  std::shared_ptr<GitHubApp> app_;
  const RelayConfig& config_;
  Metrics& metrics_;
  std::atomic<int64_t> next_pass_ms_{0};
  // The newest delivery the last complete pass read: the next reads back to it (one thread).
  int64_t scanned_until_ms_ = 0;
  WorkerPool pool_;
};

}  // namespace ootci
