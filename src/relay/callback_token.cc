#include "relay/callback_token.h"

#include "net/crypto.h"
#include "net/jwt.h"

namespace ootci {

std::string CallbackTokens::derive_key(const std::string& webhook_secret) {
  return hmac_sha256(webhook_secret, "ootci callback token v1");
}

std::string CallbackTokens::mint(const std::string& delivery_id, const std::string& repo,
                                 const std::string& head_sha, int64_t now_s) const {
  return jwt_sign_hs256({{"iss", "ootci-relay"},
                         {"delivery_id", delivery_id},
                         {"repo", repo},
                         {"head_sha", head_sha},
                         {"iat", now_s},
                         {"exp", now_s + ttl_s_}},
                        key_);
}

std::optional<CallbackTokenClaims> CallbackTokens::verify(const std::string& token,
                                                          int64_t now_s) const {
  auto claims = jwt_verify_hs256(token, key_);
  if (!claims) return std::nullopt;
  try {
    CallbackTokenClaims c{claims->at("delivery_id"), claims->at("repo"), claims->at("head_sha"),
                          claims->at("exp")};
    if (c.expires_s < now_s) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ootci
