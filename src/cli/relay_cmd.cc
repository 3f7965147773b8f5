#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <thread>

#include "base/error.h"
#include "base/yaml_doc.h"
#include "cli/commands.h"
#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay/relay_server.h"

namespace ootci {
namespace {

RelayServer* g_server = nullptr;

void serve(const std::string& config_path) {
  RelayServer server(load_relay_config(config_path));
  g_server = &server;
  // SIGTERM/SIGINT stop the listener and let in-flight dispatch attempts finish; rows not yet
  // delivered stay in the outbox for the next start.
  std::thread([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    sigwait(&set, &sig);
    spdlog::info("signal {}: shutting down", sig);
    if (g_server) g_server->stop();
  }).detach();
  server.run();
  g_server = nullptr;
}

void allowlist_check(const std::string& path) {
  Allowlist a = Allowlist::parse(load_yaml_file(path));
  for (const auto& e : a.entries()) {
    std::string extra;
    if (!e.device.empty()) extra += " device=" + e.device;
    if (!e.oncalls.empty()) {
      extra += " oncalls=";
      for (size_t i = 0; i < e.oncalls.size(); ++i) extra += (i ? "," : "") + e.oncalls[i];
    }
    std::cout << fmt::format("{} {}{}\n", e.repo, to_string(e.level), extra);
  }
  std::cout << fmt::format("{}: ok, {} repos\n", path, a.entries().size());
}

}  // namespace

void add_relay_commands(CLI::App& app) {
  auto* relay = app.add_subcommand("relay", "The upstream relay (CRCR-compatible)");
  relay->require_subcommand(1);

  auto* serve_cmd = relay->add_subcommand("serve", "Serve webhooks and dispatch to downstreams");
  static std::string config_path;
  serve_cmd->add_option("--config", config_path, "relay.yaml")->required();
  serve_cmd->callback([] {
    // Block the stop signals before any thread starts so only the waiter receives them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    serve(config_path);
  });

  auto* allow = relay->add_subcommand("allowlist", "Allowlist tools");
  allow->require_subcommand(1);
  auto* check = allow->add_subcommand("check", "Validate a CRCR allowlist and print repo → level");
  static std::string allow_path;
  check->add_option("FILE", allow_path, "allowlist.yml")->required();
  check->callback([] { allowlist_check(allow_path); });
}

}  // namespace ootci
