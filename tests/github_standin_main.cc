// The GitHub API stand-in as a program, for scripts/demo and bench/. GET /_standin/dispatches
// lists what it recorded.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <thread>

#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"
#include "testing/test_env.h"

int main(int argc, char** argv) {
  CLI::App app{"Local GitHub API stand-in (tests and demo only)"};
  int port = 0;
  int64_t app_id = 1;
  std::string public_key_file;
  std::vector<std::string> hooks;
  app.add_option("--port", port);
  app.add_option("--app-id", app_id);
  app.add_option("--public-key", public_key_file)->required();
  app.add_option("--hook", hooks, "NAME=SECRET for a generic-webhook receiver at /hooks/NAME");
  bool oidc = false;
  app.add_flag("--oidc", oidc, "also run a local OIDC issuer (JWKS + GET /token?repository=)");
  CLI11_PARSE(app, argc, argv);
  ootci::GitHubStandin standin(app_id, ootci::read_file(public_key_file));
  for (const auto& h : hooks) {
    auto eq = h.find('=');
    standin.add_hook(h.substr(0, eq), eq == std::string::npos ? "" : h.substr(eq + 1));
  }
  standin.start(port);
  std::cout << standin.url() << std::endl;
  ootci::OidcIssuerStandin issuer;
  if (oidc) {
    issuer.start();
    std::cout << issuer.issuer() << std::endl;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  standin.stop();
  return 0;
}
