// `ootci gate`: whether a CRCR dispatch (or tonight's nightly) deserves a build, as
// $GITHUB_OUTPUT lines for the workflow's next jobs (docs/dispatch.md).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "cli/commands.h"
#include "job/gate.h"

namespace ootci {
namespace {

struct GateArgs {
  std::string payload, config, github_output;
  bool nightly = false;
};

void gate(const GateArgs& a) {
  if (a.payload.empty() && !a.nightly) throw CLI::RequiredError("--payload (or --nightly)");
  BackendConfig config = load_backend_or_exit(a.config);
  GateDecision decision;
  if (a.nightly) {
    if (config.gate.nightly_command.empty())
      throw Error(fmt::format("gate.nightly.command is not set in {}", config.path));
    decision = decide_nightly(config.gate);
  } else {
    nlohmann::json client_payload = read_client_payload(a.payload);
    try {
      decision = decide_gate(config.gate, config.device_type, client_payload,
                             command_branch_head_resolver(config.gate));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", a.payload, e.what()));
    }
  }
  std::string lines = format_gate_outputs(decision, &config.select);
  std::cout << lines << std::flush;
  std::string output = a.github_output;
  if (output.empty()) output = process_env("GITHUB_OUTPUT").value_or("");
  if (!output.empty()) append_to_file(output, lines);
}

}  // namespace

void add_gate_commands(CLI::App& app) {
  static GateArgs args;
  auto* cmd = app.add_subcommand(
      "gate", "Decide whether a CRCR dispatch or the nightly builds, and which upstream SHA");
  auto* payload = cmd->add_option(
      "--payload", args.payload,
      "client_payload JSON (toJSON(github.event.client_payload)) or a repository_dispatch body");
  cmd->add_option("--config", args.config, "ootci.yaml (its gate: section)")->required();
  cmd->add_flag("--nightly", args.nightly, "run gate.nightly.command instead of reading a payload")
      ->excludes(payload);
  cmd->add_option("--github-output", args.github_output,
                  "append the outputs here too (default: $GITHUB_OUTPUT when set)");
  cmd->callback([] { gate(args); });
}

}  // namespace ootci
