#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "relay/config.h"
#include "relay/transport.h"
#include "relay/worker_pool.h"
#include "relay_store/outbox_store.h"

namespace ootci {

// CRCR's client_payload, {event_type, delivery_id, payload}, plus our additive callback_token.
// The upstream body is spliced in byte for byte, so the payload is the webhook verbatim.
std::string build_client_payload(const std::string& event_type, const std::string& delivery_id,
                                 const std::string& raw_body, const std::string& callback_token);

// Delivers the outbox. Workers lease due rows, send them, and record the outcome; failures back
// off exponentially with jitter, honour Retry-After, and give up at max_attempts or the deadline.
class OutboxSender {
 public:
  OutboxSender(OutboxStore& outbox, TransportRouter& router, DispatchPolicy policy,
               Metrics& metrics);
  ~OutboxSender();

  void start();
  void stop();
  void wake();

  // One attempt at one row, with its store update. With allow_retry=false a failure is final
  // (the synchronous, CRCR-like baseline).
  SendResult attempt(const OutboxItem& item, bool allow_retry);

  // Delay before retry number `attempts` (1-based), before Retry-After is applied.
  static int64_t backoff_ms(const DispatchPolicy& policy, int attempts, uint64_t random);

 private:
  bool deliver_one();
  std::optional<OutboxItem> next_item();
  int64_t idle_wait_ms();
  // A row due at `due_ms` (a retry), or nullopt: what is due is no longer known.
  void note_due(std::optional<int64_t> due_ms);
  // The send and what it means for the row; `out` gets the transport's answer.
  OutboxOutcome try_once(const OutboxItem& item, bool allow_retry, SendResult* out);
  // Records outcomes in one transaction, with their metrics and logs.
  void settle(const std::vector<OutboxOutcome>& outcomes);
  std::shared_ptr<const std::string> delivery_body(const std::string& delivery_id);

  OutboxStore& outbox_;
  TransportRouter& router_;
  DispatchPolicy policy_;
  Metrics& metrics_;
  WorkerPool pool_;
  std::mutex cache_mu_;
  std::map<std::string, std::shared_ptr<const std::string>> body_cache_;
  std::deque<std::string> cache_order_;
  std::mutex batch_mu_;                 // guards the fields below
  std::deque<OutboxItem> ready_;        // claimed for idle workers, not yet taken
  std::vector<OutboxOutcome> settled_;  // attempts done, not yet committed
  bool claiming_ = false, settling_ = false;
  std::mutex due_mu_;  // guards the two below
  std::optional<int64_t> due_ms_;
  int64_t due_checked_ms_ = 0;
};

}  // namespace ootci
