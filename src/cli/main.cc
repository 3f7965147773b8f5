#include <spdlog/spdlog.h>

#include <iostream>

#include "base/error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ootci: CI for PyTorch out-of-tree accelerator backends"};
  app.require_subcommand(1);
  ootci::add_relay_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ootci::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
