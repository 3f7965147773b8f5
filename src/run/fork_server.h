#pragma once
// One pytest process per upstream file that imports and collects once, then forks a child for
// each attempt the runner makes on that file (python/ootci_torch/fork_server.py): a crash
// confirmation, the rest of a file after a crash, or a rerun costs a fork, not an interpreter
// start, torch's import and the collection again.
#include <sys/types.h>

#include <atomic>
#include <map>
#include <optional>
#include <string>

#include "base/subprocess.h"

namespace ootci {

class ForkServer;

// A child of the server, watched as run_pytest watches a spawned process. Its wait status comes
// from the server, which is its parent.
class ForkedChild {
 public:
  pid_t pid() const { return pid_; }
  std::optional<int> try_wait();  // raw wait status; nullopt while it runs
  int wait();
  void await_exit(int timeout_ms);  // until the server reports the exit, or the timeout
  void signal(int sig);             // to the child's process group
  void kill_group();

 private:
  friend class ForkServer;
  ForkedChild(ForkServer* server, pid_t pid) : server_(server), pid_(pid) {}
  ForkServer* server_;
  pid_t pid_;
  std::optional<int> status_;
};

class ForkServer {
 public:
  // Starts `server` (pytest over one file with -p ootci_torch.fork_server); it collects while
  // the caller goes on.
  explicit ForkServer(SpawnOptions server);
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Waits for the collection if it is still going, then forks a child that runs the collected
  // session with `env` added and its output in `log_path`. nullopt when
  // - the server ended while collecting (it crashed, exited, or printed nothing for
  //   `stall_timeout_s`), as a spawned pytest would have: the caller reports that;
  // - the server cannot fork, or the backend started processes while collecting that its
  //   children would share (failed(): failure() says why): the caller spawns instead;
  // - `stop` was set.
  std::optional<ForkedChild> fork(const std::map<std::string, std::string>& env,
                                  const std::string& log_path, int stall_timeout_s,
                                  const std::atomic<bool>& stop);
  // From now on every fork() returns nullopt: the file is run with spawned processes.
  void give_up(std::string why);
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  // The server is gone (it crashed, exited or stalled, collecting or under a child): the next
  // attempt starts a new one.
  bool ended() const { return stalled_ || status_.has_value(); }
  bool stalled() const { return stalled_; }
  std::optional<int> status() const { return status_; }  // wait status, when it ended
  const std::string& log_path() const { return log_path_; }

 private:
  friend class ForkedChild;
  enum class Read { kLine, kNone, kClosed };
  Read read_line(int timeout_ms, std::string& line);

  int socket_ = -1;  // before server_, which sets it
  Subprocess server_;
  std::string log_path_;
  std::string pending_;  // bytes read after the last complete line
  bool ready_ = false;
  bool stalled_ = false;
  std::optional<int> status_;
  std::string failure_;
};

}  // namespace ootci
