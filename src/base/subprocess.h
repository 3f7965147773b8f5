#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ootci {

struct SpawnOptions {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to (and overriding) the current environment
  std::string output_file;                 // stdout+stderr appended here; empty: inherit
  std::string cwd;
  bool new_process_group = true;  // so a stall can kill the whole tree
  // The child gets SIGKILL when the spawning thread's process dies, so killing a runner never
  // leaves its test processes running on. (Linux ties this to the spawning thread.)
  bool die_with_parent = false;
  // When >= 0, the child's stdout / stderr (instead of output_file); used by run_captured.
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::string input_file = "";  // the child's stdin; empty: /dev/null
  // Descriptors the caller opened close-on-exec that the child keeps, under the same numbers.
  std::vector<int> inherit_fds = {};
};

// A child process. The destructor kills it (SIGKILL to its group) if it is still running.
class Subprocess {
 public:
  static Subprocess spawn(const SpawnOptions& options);
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  void signal(int sig);  // to the process group when there is one
  // SIGKILL to whatever is left of the process group, also after the leader exited: a test's own
  // helper processes must not outlive it. (Linux keeps a pgid from reuse while the group lives.)
  void kill_group();
  // Exit status as from waitpid; nullopt if still running (non-blocking form).
  std::optional<int> try_wait();
  int wait();
  // Blocks until the process ends or `timeout_ms` pass, whichever is first; does not reap it.
  // A watcher polls with it, so an exit is seen at once rather than at the next tick.
  void await_exit(int timeout_ms);

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  bool group_ = false;
  std::optional<int> status_;
  int pidfd_ = -1;  // opened by await_exit
};

// A finished command's exit code (128 + signal when killed) and its separate outputs.
struct CapturedRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool timed_out = false;  // killed (with its process group) at the timeout
  bool ok() const { return exit_code == 0 && !timed_out; }
};

// Runs `options` to completion and captures stdout and stderr through pipes (output_file,
// stdout_fd and stderr_fd are ignored). With `timeout_ms` > 0 the process (and its group, when
// it has one) is killed after that long. Throws only when the process cannot be started.
CapturedRun run_captured(SpawnOptions options, int64_t timeout_ms = 0);

// The stdout of a short command that should succeed (trailing whitespace trimmed), or "" when it
// cannot start or fails: for facts that are nice to have, such as versions and revisions.
std::string output_or_empty(const std::vector<std::string>& argv);

}  // namespace ootci
