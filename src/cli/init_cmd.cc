// `ootci init --device NAME [--dir PATH] [--force]`: scaffold a backend repository's CI.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "dispatch/scaffold.h"

namespace ootci {
namespace {

struct InitArgs {
  std::string device;
  std::string dir = ".";
  bool force = false;
};

void init(const InitArgs& a) {
  auto files = scaffold_files(a.device);
  for (const auto& path : write_scaffold(a.dir, files, a.force))
    std::cout << fmt::format("wrote {}\n", a.dir == "." ? path : a.dir + "/" + path);
  std::cout << "next steps: README.ootci.md\n";
}

}  // namespace

void add_init_commands(CLI::App& app) {
  static InitArgs args;
  auto* cmd = app.add_subcommand(
      "init", "Write a backend repository's CI: workflow, ootci.yaml, a starter test config");
  cmd->add_option("--device", args.device, "device name: [a-z0-9_-]+")->required();
  cmd->add_option("--dir", args.dir, "where to write (default: .)");
  cmd->add_flag("--force", args.force, "overwrite files that exist");
  cmd->callback([] { init(args); });
}

}  // namespace ootci
