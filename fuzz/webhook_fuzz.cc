// POST /github/webhook with a body GitHub could send: the handler answers with a status and a
// JSON reason, commits what it accepts, and never throws or crashes. The body is signed with the
// relay's secret, so the fuzzer reaches the routing behind the signature check; the input's last
// byte picks the X-GitHub-Event (and, with its high bit, a wrong signature).
#include <fstream>
#include <memory>

#include "base/metrics.h"
#include "fuzz/fuzz_input.h"
#include "net/crypto.h"
#include "relay/allowlist.h"
#include "relay/callback_token.h"
#include "relay/config.h"
#include "relay/outbox_sender.h"
#include "relay/task_runner.h"
#include "relay/transport.h"
#include "relay/webhook_handler.h"
#include "relay_store/store.h"

namespace {

constexpr const char* kSecret = "fuzz-secret";

struct Relay {
  ootci::RelayConfig config;
  std::unique_ptr<ootci::Store> store;
  std::unique_ptr<ootci::AllowlistSource> allowlist;
  ootci::Metrics metrics{{"ootci_webhook_to_dispatch_seconds"}};
  std::unique_ptr<ootci::TransportRouter> router;
  ootci::CallbackTokens tokens{ootci::CallbackTokens::derive_key(kSecret), 3600};
  std::unique_ptr<ootci::OutboxSender> sender;
  std::unique_ptr<ootci::TaskRunner> tasks;
  std::unique_ptr<ootci::WebhookHandler> handler;

  Relay() {
    std::string dir = ootci::fuzz::scratch_dir();
    std::ofstream(dir + "/allowlist.yml") << "L2:\n  - acme/backend\n"
                                          << "L3:\n  npu:\n    acme/npu: [oncall]\n"
                                          << "L4:\n  - acme/gpu\n";
    config.store = "sqlite:" + dir + "/relay.db";
    config.allowlist = dir + "/allowlist.yml";
    store = ootci::open_store(config.store);
    allowlist = std::make_unique<ootci::AllowlistSource>(config.allowlist, 900, "");
    router = std::make_unique<ootci::TransportRouter>(config, nullptr);
    sender =
        std::make_unique<ootci::OutboxSender>(store->outbox, *router, config.dispatch, metrics);
    tasks = std::make_unique<ootci::TaskRunner>(store->tasks, nullptr, config, metrics);
    handler = std::make_unique<ootci::WebhookHandler>(config, kSecret, *store, *allowlist, *sender,
                                                      metrics, tokens, *tasks);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Relay relay;
  static int64_t deliveries = 0;
  static const char* kEvents[] = {"pull_request", "push", "check_run", "check_suite", "ping"};
  if (size == 0) return 0;
  uint8_t pick = data[size - 1];
  ootci::WebhookRequest req;
  req.event = kEvents[(pick & 0x7f) % 5];
  req.delivery = "fuzz-" + std::to_string(++deliveries);
  req.body = ootci::fuzz::text(data, size);
  req.signature = pick & 0x80 ? "sha256=00" : ootci::github_signature(kSecret, req.body);
  ootci::Reply reply = relay.handler->handle(req);
  if (reply.status < 200 || reply.status > 599) __builtin_trap();
  return 0;
}
