#pragma once
// Running the real build/ootci binary from a test, as a user would.
#include <map>
#include <string>
#include <vector>

namespace ootci {

struct CliRun {
  int code = -1;  // exit code; -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs build/ootci with `args` and extra environment `env`, capturing stdout and stderr apart.
CliRun run_ootci(const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env = {});

std::vector<std::string> split_lines(const std::string& text);

}  // namespace ootci
