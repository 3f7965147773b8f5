#include "testing/oidc_issuer.h"

#include "base/time.h"
#include "net/crypto.h"
#include "net/jwt.h"
#include "net/listen_backlog.h"
#include "net/oidc.h"

namespace ootci {

OidcIssuerStandin::OidcIssuerStandin()
    : key_(generate_rsa_private_key_pem()), public_key_(public_key_pem_from_private(key_)) {}

OidcIssuerStandin::~OidcIssuerStandin() {
  stop();
}

std::string OidcIssuerStandin::issuer() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string OidcIssuerStandin::jwks_url() const {
  return issuer() + "/.well-known/jwks";
}

void OidcIssuerStandin::start() {
  server_.Get("/.well-known/jwks", [this](const httplib::Request&, httplib::Response& res) {
    jwks_requests_++;
    nlohmann::json jwks = {{"keys", {rsa_jwk_from_private(key_, "test-key-1")}}};
    res.set_content(jwks.dump(), "application/json");
  });
  // For scripts/demo: GET /token?repository=owner/repo mints what GitHub Actions would.
  server_.Get("/token", [this](const httplib::Request& req, httplib::Response& res) {
    res.set_content(mint(claims_for(req.get_param_value("repository"))), "text/plain");
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  raise_listen_backlog(port_);
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

void OidcIssuerStandin::stop() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

nlohmann::json OidcIssuerStandin::claims_for(const std::string& repo,
                                             const std::string& audience) const {
  int64_t now = now_s();
  return {{"iss", issuer()},
          {"aud", audience},
          {"sub", "repo:" + repo + ":ref:refs/heads/main"},
          {"repository", repo},
          {"repository_owner", repo.substr(0, repo.find('/'))},
          {"run_id", "123"},
          {"iat", now},
          {"nbf", now},
          {"exp", now + 300}};
}

std::string OidcIssuerStandin::mint(const nlohmann::json& claims) const {
  return jwt_sign_rs256(claims, key_, "test-key-1");
}

}  // namespace ootci
