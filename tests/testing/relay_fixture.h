#pragma once
// A relay process wired to the GitHub stand-in, a local OIDC issuer and a fresh store, for the
// integration tests of both halves of the relay. Parameterized by store kind.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "net/http_client.h"
#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"
#include "testing/relay_process.h"

namespace ootci {

class RelayFixture : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr const char* kSecret = "It's a Secret to Everybody";
  static constexpr const char* kUpstream = "Codertocat/Hello-World";

  void SetUp() override;
  // The relay config with `extra` appended (top-level YAML keys, or `dispatch:` continuation
  // lines indented by two spaces).
  std::string config(const std::string& extra = "");
  RelayProcess& start_relay(const std::string& extra = "",
                            std::map<std::string, std::string> env = {});

  HttpResult send(const std::string& event, const std::string& delivery, const std::string& body,
                  const std::string& secret = kSecret);
  HttpResult callback(const nlohmann::json& body, const std::string& bearer);
  HttpResult get(const std::string& path);
  std::string fixture(const std::string& name);
  // Waits for n dispatches, then a little longer to catch any duplicate.
  std::vector<RecordedDispatch> settle(size_t n, int timeout_ms = 15000);

  std::string dir_;
  std::string store_uri_;
  int port_ = 0;
  std::unique_ptr<GitHubStandin> standin_;
  std::unique_ptr<OidcIssuerStandin> oidc_;
  std::unique_ptr<RelayProcess> relay_;
};

}  // namespace ootci
