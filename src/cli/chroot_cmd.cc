// `ootci chroot`: runs a command in another root folder, as `backend.root` runs a backend's
// Python (src/base/root_exec.h). Also for people: a shell in the bed that the tests see.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "base/root_exec.h"
#include "cli/commands.h"

namespace ootci {

void add_chroot_commands(CLI::App& app) {
  struct Args {
    RootExec exec;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "chroot",
      "Run a command in another root folder with host folders at the same paths (backend.root)");
  cmd->add_option("--root", args->exec.root, "the root folder")->required();
  cmd->add_option("--bind", args->exec.binds, "a host folder to show at the same path (repeat)");
  cmd->add_option("--cwd", args->exec.cwd, "working folder inside (default: the current one)");
  // Everything from the command on is the command's, dashes included.
  cmd->prefix_command();
  cmd->footer("The command and its arguments follow the options (after --).");
  cmd->callback([args, cmd] {
    RootExec x = args->exec;
    x.argv = cmd->remaining();
    if (!x.argv.empty() && x.argv.front() == "--") x.argv.erase(x.argv.begin());
    if (x.cwd.empty()) x.cwd = std::filesystem::current_path().string();
    std::string why = exec_in_root(x);
    std::cerr << "ootci chroot: " << why << "\n";
    throw ExitStatus{127};
  });
}

}  // namespace ootci
