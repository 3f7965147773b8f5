#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "github/app_client.h"
#include "net/http_client.h"
#include "relay/config.h"

namespace ootci {

struct SendResult {
  bool delivered = false;
  bool retryable = false;
  int status = 0;
  std::string error;
  std::optional<int64_t> retry_after_s;
};

// Network errors, 5xx, 429 and GitHub's rate-limit 403 are worth retrying; other 4xx are not.
SendResult classify_http(const HttpResult& result);

// How one dispatch reaches one downstream repo.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual SendResult send(const std::string& repo, const std::string& event_type,
                          const std::string& delivery_id, const std::string& client_payload) = 0;
};

// repository_dispatch through the GitHub App installed on the downstream repo.
class GitHubAppTransport : public Transport {
 public:
  explicit GitHubAppTransport(std::shared_ptr<GitHubApp> app) : app_(std::move(app)) {}
  SendResult send(const std::string& repo, const std::string& event_type,
                  const std::string& delivery_id, const std::string& client_payload) override;

 private:
  std::shared_ptr<GitHubApp> app_;  // null when no App is configured
};

// A signed POST of {event_type, client_payload} for backends outside GitHub Actions
// (`ootci agent`). Header X-Ootci-Signature-256: sha256=HMAC(secret, body), as GitHub signs.
class WebhookTransport : public Transport {
 public:
  WebhookTransport(std::string url, std::string secret, int timeout_ms)
      : url_(std::move(url)), secret_(std::move(secret)), timeout_ms_(timeout_ms) {}
  SendResult send(const std::string& repo, const std::string& event_type,
                  const std::string& delivery_id, const std::string& client_payload) override;

 private:
  std::string url_;
  std::string secret_;
  int timeout_ms_;
};

// The relay's GitHub App, or null when github.app_id/private_key_file are not configured.
std::shared_ptr<GitHubApp> make_github_app(const RelayConfig& config);

// Picks the transport per repo: the `downstreams` override, else the GitHub App.
class TransportRouter {
 public:
  TransportRouter(const RelayConfig& config, std::shared_ptr<GitHubApp> app);
  Transport& for_repo(const std::string& repo);

 private:
  std::unique_ptr<Transport> github_;
  std::map<std::string, std::unique_ptr<Transport>> overrides_;
};

}  // namespace ootci
