#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "net/http_client.h"

namespace ootci {

struct GitHubAppConfig {
  std::string api_url = "https://api.github.com";
  int64_t app_id = 0;
  std::string private_key_pem;
  int timeout_ms = 20000;  // per request; the relay derives its leases from it
};

// A GitHub App acting on downstream repos: app JWT → installation → installation token → API call.
// Installation tokens are cached per repo until five minutes before they expire.
class GitHubApp {
 public:
  explicit GitHubApp(GitHubAppConfig config);

  // RS256 JWT for /app endpoints, valid 9 minutes, backdated 60 s for clock skew (GitHub's advice).
  std::string app_jwt(int64_t now_s) const;

  // On failure returns the HTTP result of the failing step (status 0 for network errors).
  struct TokenResult {
    std::string token;
    HttpResult failure;
    bool ok() const { return !token.empty(); }
  };
  TokenResult installation_token(const std::string& repo);
  void forget_token(const std::string& repo);

  // POST /repos/{repo}/dispatches with a pre-serialized client_payload object.
  HttpResult dispatch(const std::string& repo, const std::string& event_type,
                      const std::string& client_payload_json);

  // A call to the App's own endpoints (/app, /app/hook/deliveries), authenticated by the App JWT.
  HttpResult app_call(const std::string& method, const std::string& path,
                      const std::string& body = "");

  // Any REST call authenticated as the installation on `repo`.
  HttpResult call(const std::string& repo, const std::string& method, const std::string& path,
                  const std::string& body = "");

  const GitHubAppConfig& config() const { return config_; }

 private:
  struct CachedToken {
    std::string token;
    int64_t refresh_after_s = 0;
  };
  GitHubAppConfig config_;
  std::mutex mu_;
  std::map<std::string, CachedToken> tokens_;
};

// Parses GitHub's "2026-11-29T17:15:03Z" timestamps; 0 if malformed.
int64_t parse_github_time(const std::string& text);

}  // namespace ootci
