// Loading the ootci.yaml a command was given, the same way for every command.
#include <iostream>

#include "cli/commands.h"

namespace ootci {

BackendConfig load_backend_or_exit(const std::string& path) {
  BackendConfigResult loaded = load_backend_config(path);
  for (const auto& e : loaded.errors) std::cerr << e << "\n";
  if (!loaded.config) throw ExitStatus{1};
  return *loaded.config;
}

}  // namespace ootci
