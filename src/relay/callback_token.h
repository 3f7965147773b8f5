#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ootci {

// The replay-proof token the relay adds to every dispatch (client_payload.callback_token). It is an
// HS256 JWT over (delivery_id, repo, head_sha, expiry), so a callback can prove which dispatch it
// answers. CRCR planned this ("Phase 6") but never shipped it.
struct CallbackTokenClaims {
  std::string delivery_id;
  std::string repo;
  std::string head_sha;
  int64_t expires_s = 0;
};

class CallbackTokens {
 public:
  CallbackTokens(std::string key, int64_t ttl_s) : key_(std::move(key)), ttl_s_(ttl_s) {}
  // Derives the signing key from the webhook secret when no separate secret is configured.
  static std::string derive_key(const std::string& webhook_secret);

  std::string mint(const std::string& delivery_id, const std::string& repo,
                   const std::string& head_sha, int64_t now_s) const;
  // nullopt if the signature is wrong, the token is malformed, or it has expired.
  std::optional<CallbackTokenClaims> verify(const std::string& token, int64_t now_s) const;

 private:
  std::string key_;
  int64_t ttl_s_;
};

}  // namespace ootci
