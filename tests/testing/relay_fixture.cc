#include "testing/relay_fixture.h"

#include <fmt/format.h>

#include <thread>

#include "testing/relay_config.h"
#include "testing/test_env.h"

namespace ootci {

void RelayFixture::SetUp() {
  dir_ = make_temp_dir();
  standin_ = start_github_standin(dir_, 42);
  oidc_ = std::make_unique<OidcIssuerStandin>();
  oidc_->start();
  write_file(dir_ + "/allowlist.yml",
             "L1:\n  - acme/one\nL2:\n  - acme/two\nL3:\n  acme-dev:\n    acme/three: [ann]\n"
             "L4:\n  - acme/four: '@bob'\n");
  store_uri_ = fresh_store_uri(GetParam());
}

std::string RelayFixture::config(const std::string& extra) {
  port_ = free_port();
  RelayYaml y = wired_relay(port_, store_uri_, *standin_, oidc_.get());
  y.upstream = kUpstream;
  y.dispatch += "  request_timeout_ms: 1000\n  deadline_s: 30\n";
  y.extra = extra;
  return relay_yaml(y);
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
