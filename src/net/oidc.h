#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "net/jwt.h"

namespace ootci {

struct OidcIssuer {
  std::string issuer;    // exact `iss`
  std::string jwks_url;  // where its signing keys are published
  std::string audience;  // required `aud`
  // How the calling repo is found: github (the `repository` claim), or buildkite, gitlab or
  // circleci (claims that name the project, mapped through ci_providers.yml).
  std::string provider = "github";
};

// Where a provider publishes its keys, after the issuer URL; null for an unknown provider.
// GitHub and Buildkite /.well-known/jwks, GitLab /oauth/discovery/keys, CircleCI
// /.well-known/jwks-pub.json.
const char* default_jwks_path(const std::string& provider);

struct VerifiedToken {
  const OidcIssuer* issuer = nullptr;
  nlohmann::json claims;
};

// The RSA keys of a JWKS document by kid (other key types are skipped, as are malformed keys);
// nullopt unless it is an object with a `keys` array.
using JwksKeys = std::map<std::string, std::shared_ptr<const PublicKey>>;
std::optional<JwksKeys> parse_jwks(const std::string& body);

// Verifies OIDC bearer tokens: RS256 only, signature against the issuer's JWKS (cached, refetched
// when an unknown kid appears), then iss, aud, exp, nbf and iat with a small leeway.
// Hand-written over OpenSSL because Debian ships no maintained C++ JOSE library.
class OidcVerifier {
 public:
  explicit OidcVerifier(std::vector<OidcIssuer> issuers, int64_t leeway_s = 60,
                        int64_t jwks_ttl_s = 3600);
  // The error string is safe to return to the caller (it names the failed check only).
  std::variant<VerifiedToken, std::string> verify(const std::string& token, int64_t now_s);

 private:
  std::variant<VerifiedToken, std::string> verify_checked(const std::string& token, int64_t now_s);
  // The key for `kid` (or the only key when kid is empty); null if none.
  std::shared_ptr<const PublicKey> key_for(const OidcIssuer& issuer, const std::string& kid,
                                           int64_t now_s);

  struct Jwks {
    JwksKeys key_by_kid;
    int64_t fetched_s = 0;
    int64_t attempted_s = 0;
    bool fetching = false;
  };
  std::vector<OidcIssuer> issuers_;
  int64_t leeway_s_;
  int64_t jwks_ttl_s_;
  std::mutex mu_;
  std::condition_variable fetched_cv_;
  std::map<std::string, Jwks> jwks_;  // by issuer
};

// RSA public key (PEM) from a JWK's base64url `n` and `e`; "" if malformed.
std::string rsa_pem_from_jwk(const std::string& n_b64url, const std::string& e_b64url);
// The JWK of an RSA private key's public half, with the given kid.
nlohmann::json rsa_jwk_from_private(const std::string& private_pem, const std::string& kid);

}  // namespace ootci
