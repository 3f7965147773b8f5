#pragma once
#include <optional>
#include <string>
#include <variant>

#include "base/metrics.h"
#include "net/oidc.h"
#include "net/reply.h"
#include "relay/allowlist.h"
#include "relay/callback_token.h"
#include "relay/ci_providers.h"
#include "relay/config.h"
#include "relay/sha_validator.h"
#include "relay/task_runner.h"
#include "relay_store/store.h"

namespace ootci {

struct CallbackRequest {
  std::string authorization;  // the Authorization header
  std::string body;
};

struct CallbackDeps {
  const RelayConfig& config;
  Store& store;
  AllowlistSource& allowlist;
  OidcVerifier& oidc;
  const CiProviders& ci_providers;
  const CallbackTokens& tokens;
  ShaValidator& sha_validator;
  TaskRunner& tasks;
  Metrics& metrics;
};

// POST /github/callback: CRCR's five stages (OIDC, allowlist L2+, rate limit, state machine,
// trusted/untrusted split), plus replay-proof callback tokens and safe retries.
class CallbackHandler {
 public:
  explicit CallbackHandler(CallbackDeps deps) : d_(deps) {}
  Reply handle(const CallbackRequest& request);

 private:
  void count(const char* result);  // ootci_callbacks_total{result}
  std::variant<std::string, Reply> caller_repo(const std::string& authorization);
  std::variant<std::optional<std::string>, Reply> check_callback_token(
      const struct CallbackBody& body, const std::string& repo);
  Reply apply(const std::string& repo, const AllowlistEntry& entry, struct CallbackBody& body,
              const std::optional<std::string>& token_sha);
  CallbackDeps d_;
};

}  // namespace ootci
