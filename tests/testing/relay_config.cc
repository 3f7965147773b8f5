#include "testing/relay_config.h"

#include <fmt/format.h>

#include "net/crypto.h"
#include "testing/test_env.h"

namespace ootci {

std::unique_ptr<GitHubStandin> start_github_standin(const std::string& dir, int64_t app_id) {
  std::string key = generate_rsa_private_key_pem();
  write_file(dir + "/app.pem", key);
  auto standin = std::make_unique<GitHubStandin>(app_id, public_key_pem_from_private(key));
  standin->start();
  return standin;
}

RelayYaml wired_relay(int port, const std::string& store, const GitHubStandin& github,
                      const OidcIssuerStandin* oidc) {
  RelayYaml r;
  r.port = port;
  r.store = store;
  r.github_url = github.url();
  r.app_id = github.app_id();
  if (oidc) {
    r.oidc_issuer = oidc->issuer();
    r.oidc_jwks_url = oidc->jwks_url();
  }
  return r;
}

std::string relay_yaml(const RelayYaml& r) {
  std::string y = fmt::format(
      "listen: 127.0.0.1:{}\nupstream_repo: {}\nstore: \"{}\"\nallowlist: allowlist.yml\n"
      "webhook_secret_env: {}\n",
      r.port, r.upstream, r.store, r.secret_env);
  if (r.http_threads) y += fmt::format("http_threads: {}\n", r.http_threads);
  y += fmt::format("github:\n  api_url: {}\n  app_id: {}\n  private_key_file: app.pem\n",
                   r.github_url, r.app_id);
  if (!r.oidc_issuer.empty())
    y += fmt::format(
        "oidc:\n  issuers:\n    - issuer: {}\n      jwks_url: {}\n"
        "      audience: pytorch-cross-repo-ci-relay\n",
        r.oidc_issuer, r.oidc_jwks_url);
  if (!r.dispatch.empty()) y += "dispatch:\n" + r.dispatch;
  return y + r.extra;
}

}  // namespace ootci
