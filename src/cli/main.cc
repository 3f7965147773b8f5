#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/version.h"

int main(int argc, char** argv) {
  CLI::App app{"ootci: CI for PyTorch out-of-tree accelerator backends"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("ootci {} (git {}, {})", ootci::kVersion,
                                                ootci::kGitRevision, ootci::kBuildType));
  ootci::add_relay_commands(app);
  ootci::add_plan_commands(app);
  ootci::add_evidence_commands(app);
  ootci::add_shards_commands(app);
  ootci::add_run_commands(app);
  ootci::add_gate_commands(app);
  ootci::add_report_commands(app);
  ootci::add_agent_commands(app);
  ootci::add_init_commands(app);
  ootci::add_discover_commands(app);
  ootci::add_select_commands(app);
  ootci::add_attribute_commands(app);
  ootci::add_chroot_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help). Usage errors exit 2 as is conventional, not
    // with CLI11's own codes (106 for a missing option, 109 for an extra one, ...).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const ootci::ExitStatus& e) {
    return e.code;
  } catch (const ootci::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
