#include "testing/relay_fixture.h"

#include <fmt/format.h>

#include <thread>

#include "net/crypto.h"
#include "testing/test_env.h"

namespace ootci {

void RelayFixture::SetUp() {
  dir_ = make_temp_dir();
  std::string key = generate_rsa_private_key_pem();
  write_file(dir_ + "/app.pem", key);
  standin_ = std::make_unique<GitHubStandin>(42, public_key_pem_from_private(key));
  standin_->start();
  oidc_ = std::make_unique<OidcIssuerStandin>();
  oidc_->start();
  write_file(dir_ + "/allowlist.yml",
             "L1:\n  - acme/one\nL2:\n  - acme/two\nL3:\n  acme-dev:\n    acme/three: [ann]\n"
             "L4:\n  - acme/four: '@bob'\n");
  store_uri_ = fresh_store_uri(GetParam());
}

std::string RelayFixture::config(const std::string& extra) {
  port_ = free_port();
  return fmt::format(R"(listen: 127.0.0.1:{}
upstream_repo: {}
store: "{}"
allowlist: allowlist.yml
webhook_secret_env: TEST_WEBHOOK_SECRET
github:
  api_url: {}
  app_id: 42
  private_key_file: app.pem
oidc:
  issuers:
    - issuer: {}
      jwks_url: {}
      audience: pytorch-cross-repo-ci-relay
dispatch:
  initial_backoff_ms: 50
  max_backoff_ms: 400
  request_timeout_ms: 1000
  deadline_s: 30
{})",
                     port_, kUpstream, store_uri_, standin_->url(), oidc_->issuer(),
                     oidc_->jwks_url(), extra);
}

RelayProcess& RelayFixture::start_relay(const std::string& extra,
                                        std::map<std::string, std::string> env) {
  env["TEST_WEBHOOK_SECRET"] = kSecret;
  relay_ = std::make_unique<RelayProcess>(dir_, config(extra), port_, env);
  relay_->start();
  return *relay_;
}

HttpResult RelayFixture::send(const std::string& event, const std::string& delivery,
                              const std::string& body, const std::string& secret) {
  return send_webhook(relay_->url(), event, delivery, body, secret);
}

HttpResult RelayFixture::callback(const nlohmann::json& body, const std::string& bearer) {
  HttpRequest req;
  req.method = "POST";
  req.url = relay_->url() + "/github/callback";
  req.body = body.dump();
  if (!bearer.empty()) req.headers = {{"Authorization", "Bearer " + bearer}};
  return http_send(req);
}

HttpResult RelayFixture::get(const std::string& path) {
  HttpRequest req;
  req.url = relay_->url() + path;
  return http_send(req);
}

std::string RelayFixture::fixture(const std::string& name) {
  return read_file(fixture_path("github-webhooks/" + name));
}

std::vector<RecordedDispatch> RelayFixture::settle(size_t n, int timeout_ms) {
  EXPECT_TRUE(standin_->wait_for_dispatches(n, timeout_ms)) << relay_->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  return standin_->dispatches();
}

}  // namespace ootci
