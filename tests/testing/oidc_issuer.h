#pragma once
// A local OIDC issuer for tests: an RS256 key, its JWKS on loopback, and tokens to order
// (including the malformed and forged ones an attacker would try).
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace ootci {

class OidcIssuerStandin {
 public:
  OidcIssuerStandin();
  ~OidcIssuerStandin();
  void start();
  void stop();
  std::string issuer() const;  // http://127.0.0.1:<port>
  std::string jwks_url() const;
  const std::string& private_key_pem() const { return key_; }
  const std::string& public_key_pem() const { return public_key_; }

  // A GitHub Actions-style token: iss, aud, repository, iat/nbf/exp around now.
  nlohmann::json claims_for(const std::string& repo,
                            const std::string& audience = "pytorch-cross-repo-ci-relay") const;
  std::string mint(const nlohmann::json& claims) const;  // RS256 with the published key
  int jwks_requests() const { return jwks_requests_; }

 private:
  std::string key_;
  std::string public_key_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> jwks_requests_{0};
};

}  // namespace ootci
