#pragma once
// The processes a test process started, from /proc: how the runner sees that a helper a test
// waits on (a device daemon, such as OpenReg's) has died, long before the test's time limit.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace ootci {

struct ProcessStat {
  pid_t pid = 0, ppid = 0;
  char state = '?';     // R, S, D, Z, ...
  int exit_status = 0;  // a zombie's wait status (/proc/PID/stat field 52), 0 otherwise
  std::string name;     // comm
};

// Every process /proc lists now (those that vanish while it is read are left out).
std::vector<ProcessStat> read_processes();

// Parses one /proc/PID/stat line; nullopt when it is not one.
std::optional<ProcessStat> parse_process_stat(const std::string& line);

// A process under `root` (not `root` itself) that has exited unsuccessfully (a nonzero status or
// a signal) and that no one has waited for: its parent, still running, has not noticed. A test
// whose helper is such a zombie is, in the cases that matter, blocked waiting for an answer that
// will never come.
std::optional<ProcessStat> dead_helper(const std::vector<ProcessStat>& processes, pid_t root);

// "exited with status 1" or "died from SIGSEGV", of a wait status.
std::string exit_text(int wait_status);

}  // namespace ootci
