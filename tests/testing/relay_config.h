#pragma once
// A relay wired to the test stand-ins, shared by the integration tests and the benches so each
// states only what it changes: the GitHub stand-in for a fresh App, and the relay's YAML.
#include <cstdint>
#include <memory>
#include <string>

#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"

namespace ootci {

// A started GitHub stand-in for a new App whose private key is written to <dir>/app.pem.
std::unique_ptr<GitHubStandin> start_github_standin(const std::string& dir, int64_t app_id);

struct RelayYaml {
  int port = 0;
  std::string store;
  std::string github_url;
  int64_t app_id = 42;                     // wired_relay: the stand-in's
  std::string oidc_issuer, oidc_jwks_url;  // no oidc section when empty
  std::string secret_env = "TEST_WEBHOOK_SECRET";
  std::string upstream = "Codertocat/Hello-World";
  int http_threads = 0;  // 0: the relay's default
  // Lines under `dispatch:`, indented by two spaces. By default the quick retries tests want.
  std::string dispatch = "  initial_backoff_ms: 50\n  max_backoff_ms: 400\n";
  std::string extra;  // appended: top-level keys, or more dispatch lines indented by two
};

// Listening on `port`, storing in `store`, calling `github` and trusting `oidc` (if any).
RelayYaml wired_relay(int port, const std::string& store, const GitHubStandin& github,
                      const OidcIssuerStandin* oidc = nullptr);

// The relay.yaml for `r`, reading allowlist.yml and app.pem next to it.
std::string relay_yaml(const RelayYaml& r);

}  // namespace ootci
