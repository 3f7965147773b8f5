// `ootci agent --config agent.yaml`: the self-hosted agent (docs/dispatch.md).
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "dispatch/agent.h"
#include "dispatch/agent_config.h"

namespace ootci {
namespace {

Agent* g_agent = nullptr;

void serve(const std::string& config_path) {
  AgentConfig config = load_agent_config(config_path);
  BackendConfig backend = load_backend_or_exit(config.backend);
  // Each job's tests run under this same binary, so agent and runner never disagree on versions.
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  Agent agent(std::move(config), std::move(backend), self);
  g_agent = &agent;
  // SIGTERM/SIGINT: stop intake and interrupt running tests; their jobs resume at the next start.
  std::thread([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    sigwait(&set, &sig);
    spdlog::info("signal {}: shutting down", sig);
    if (g_agent) g_agent->stop();
  }).detach();
  agent.run();
  agent.stop();
  g_agent = nullptr;
}

}  // namespace

void add_agent_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "agent", "Self-hosted agent: receive the relay's dispatches, run the plan, report back");
  static std::string config_path;
  cmd->add_option("--config", config_path, "agent.yaml")->required();
  cmd->callback([] {
    // Block the stop signals before any thread starts so only the waiter receives them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    serve(config_path);
  });
}

}  // namespace ootci
