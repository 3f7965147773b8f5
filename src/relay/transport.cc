#include "relay/transport.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "net/crypto.h"

namespace ootci {

SendResult classify_http(const HttpResult& r) {
  SendResult s;
  s.status = r.status;
  if (r.status >= 200 && r.status < 300) {
    s.delivered = true;
    return s;
  }
  s.retry_after_s = retry_after_seconds(r);
  if (r.status == 0) {
    s.error = r.error;
    s.retryable = true;
    return s;
  }
  std::string snippet = r.body.substr(0, 200);
  s.error = fmt::format("HTTP {}: {}", r.status, snippet);
  bool rate_limited =
      r.status == 403 && (s.retry_after_s || r.header("x-ratelimit-remaining") == "0");
  s.retryable = r.status >= 500 || r.status == 429 || r.status == 401 || rate_limited;
  return s;
}

SendResult GitHubAppTransport::send(const std::string& repo, const std::string& event_type,
                                    const std::string&, const std::string& client_payload) {
  if (!app_) {
    SendResult s;
    s.error = "no GitHub App configured (github.app_id and github.private_key_file)";
    return s;
  }
  return classify_http(app_->dispatch(repo, event_type, client_payload));
}

SendResult WebhookTransport::send(const std::string&, const std::string& event_type,
                                  const std::string& delivery_id,
                                  const std::string& client_payload) {
  HttpRequest req;
  req.method = "POST";
  req.url = url_;
  req.timeout_ms = timeout_ms_;
  req.body = fmt::format(R"({{"event_type":{},"client_payload":{}}})",
                         nlohmann::json(event_type).dump(), client_payload);
  req.headers = {{"X-Ootci-Signature-256", github_signature(secret_, req.body)},
                 {"X-Ootci-Delivery", delivery_id},
                 {"X-Ootci-Event", event_type},
                 {"User-Agent", "ootci-relay"}};
  return classify_http(http_send(req));
}

std::shared_ptr<GitHubApp> make_github_app(const RelayConfig& config) {
  if (!config.github.app_id || config.github.private_key_file.empty()) return nullptr;
  std::optional<std::string> key = read_file_bytes(config.github.private_key_file);
  if (!key)
    throw Error(fmt::format("{}: github.private_key_file: cannot read {}", config.path,
                            config.github.private_key_file));
  return std::make_shared<GitHubApp>(
      GitHubAppConfig{config.github.api_url, config.github.app_id, *key,
                      static_cast<int>(config.dispatch.request_timeout_ms)});
}

TransportRouter::TransportRouter(const RelayConfig& config, std::shared_ptr<GitHubApp> app) {
  github_ = std::make_unique<GitHubAppTransport>(app);
  for (const auto& [repo, t] : config.downstreams) {
    if (t.transport == "github") continue;
    const char* secret = std::getenv(t.secret_env.c_str());
    if (!secret || !*secret)
      throw Error(fmt::format("{}: downstreams.{}.secret_env: environment variable {} is not set",
                              config.path, repo, t.secret_env));
    overrides_[repo] = std::make_unique<WebhookTransport>(
        t.url, secret, static_cast<int>(config.dispatch.request_timeout_ms));
  }
}

Transport& TransportRouter::for_repo(const std::string& repo) {
  auto it = overrides_.find(repo);
  return it == overrides_.end() ? *github_ : *it->second;
}

}  // namespace ootci
