#include "base/git.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/subprocess.h"
#include "base/text.h"

namespace ootci {
namespace {

CapturedRun run_git(const std::string& dir, const std::vector<std::string>& args) {
  SpawnOptions o;
  o.argv = {"git", "-c", "core.quotePath=false", "-C", dir};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env["GIT_TERMINAL_PROMPT"] = std::string("0");
  o.new_process_group = false;
  return run_captured(o);
}

}  // namespace

std::string git_output(const std::string& dir, const std::vector<std::string>& args) {
  CapturedRun r = run_git(dir, args);
  if (r.exit_code != 0) {
    std::vector<std::string> err = lines(trim_end(r.err));
    std::string last = err.empty() ? "" : ": " + err.back();
    throw Error(fmt::format("git -C {} {}: exited with {}{}", dir, fmt::join(args, " "),
                            r.exit_code, last));
  }
  return r.out;
}

std::optional<std::string> try_git_output(const std::string& dir,
                                          const std::vector<std::string>& args) {
  try {
    CapturedRun r = run_git(dir, args);
    if (r.exit_code != 0) return std::nullopt;
    return r.out;
  } catch (const Error&) {
    return std::nullopt;  // git cannot be started
  }
}

}  // namespace ootci
