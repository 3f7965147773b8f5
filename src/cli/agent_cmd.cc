// `ootci agent --config agent.yaml`: the self-hosted agent (docs/dispatch.md).
#include <filesystem>

#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "job/agent.h"
#include "job/agent_config.h"

namespace ootci {
namespace {

void serve_agent(const std::string& config_path) {
  AgentConfig config = load_agent_config(config_path);
  BackendConfig backend = load_backend_or_exit(config.backend);
  // Each job's tests run under this same binary, so agent and runner never disagree on versions.
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  Agent agent(std::move(config), std::move(backend), self);
  // SIGTERM/SIGINT: stop intake and interrupt running tests; their jobs resume at the next start.
  serve_until_stop_signal([&] { agent.run(); }, [&] { agent.stop(); });
}

}  // namespace

void add_agent_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "agent", "Self-hosted agent: receive the relay's dispatches, run the plan, report back");
  static std::string config_path;
  cmd->add_option("--config", config_path, "agent.yaml")->required();
  cmd->callback([] {
    block_stop_signals();
    serve_agent(config_path);
  });
}

}  // namespace ootci
