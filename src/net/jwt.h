#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ootci {

// Compact JWS. Written here because Debian has no maintained C++ JWT library; the crypto itself is
// OpenSSL's.
std::string jwt_sign_rs256(const nlohmann::json& claims, const std::string& private_key_pem,
                           const std::string& kid = "");
std::string jwt_sign_hs256(const nlohmann::json& claims, const std::string& key);

struct JwtParts {
  nlohmann::json header;
  nlohmann::json claims;
  std::string signing_input;  // base64url(header) "." base64url(claims)
  std::string signature;      // raw bytes
};
// Splits and decodes without verifying anything.
std::optional<JwtParts> jwt_decode(const std::string& token);

bool jwt_verify_rs256(const JwtParts& parts, const std::string& public_key_pem);

// A parsed public key, for verifying many tokens without re-reading the PEM each time.
struct PublicKey;
std::shared_ptr<const PublicKey> parse_public_key(const std::string& pem);  // null if invalid
bool jwt_verify_rs256(const JwtParts& parts, const PublicKey& key);
// Returns the claims if the signature is a valid HS256 MAC under key.
std::optional<nlohmann::json> jwt_verify_hs256(const std::string& token, const std::string& key);

}  // namespace ootci
