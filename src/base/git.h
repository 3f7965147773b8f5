#pragma once
// Running git: the one way. Paths are printed unquoted (core.quotePath=false) and git never
// prompts for credentials.
#include <optional>
#include <string>
#include <vector>

namespace ootci {

// Runs `git -C dir args...` and returns its stdout; an Error naming the command and git's last
// line of stderr when git fails.
std::string git_output(const std::string& dir, const std::vector<std::string>& args);

// The same, nullopt when git fails: for facts a caller can do without (a manifest's revision).
std::optional<std::string> try_git_output(const std::string& dir,
                                          const std::vector<std::string>& args);

}  // namespace ootci
