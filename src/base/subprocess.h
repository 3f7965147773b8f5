#pragma once
#include <sys/types.h>

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

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  bool group_ = false;
  std::optional<int> status_;
};

}  // namespace ootci
