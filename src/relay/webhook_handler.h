#pragma once
#include <string>

#include "base/metrics.h"
#include "net/reply.h"
#include "relay/allowlist.h"
#include "relay/callback_token.h"
#include "relay/config.h"
#include "relay/outbox_sender.h"
#include "relay/task_runner.h"
#include "relay_store/store.h"

namespace ootci {

struct WebhookRequest {
  std::string event;      // X-GitHub-Event
  std::string delivery;   // X-GitHub-Delivery
  std::string signature;  // X-Hub-Signature-256
  std::string body;
};

// POST /github/webhook, as CRCR's webhook Lambda: filter events, verify the signature, filter on
// the upstream repo, then route. Dispatchable events are committed to the outbox before the answer.
class WebhookHandler {
 public:
  WebhookHandler(const RelayConfig& config, std::string secret, Store& store,
                 AllowlistSource& allowlist, OutboxSender& outbox_sender, Metrics& metrics,
                 const CallbackTokens& tokens, TaskRunner& tasks);
  Reply handle(const WebhookRequest& request);

 private:
  Reply dispatch(const WebhookRequest& request, const nlohmann::json& payload);
  Reply record_label(const nlohmann::json& payload);
  Reply rerun_requested(const std::string& event, const nlohmann::json& payload);

  const RelayConfig& config_;
  std::string secret_;
  Store& store_;
  AllowlistSource& allowlist_;
  OutboxSender& outbox_sender_;
  Metrics& metrics_;
  const CallbackTokens& tokens_;
  TaskRunner& tasks_;
};

// The PR head SHA (pull_request) or the pushed `after` SHA (push); empty if neither.
std::string head_sha_of(const nlohmann::json& payload);

}  // namespace ootci
