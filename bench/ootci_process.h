#pragma once
// Starting the ootci binary from a benchmark, timed.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "testing/test_env.h"

namespace ootci::bench {

struct TimedRun {
  int status;  // as from waitpid
  double seconds;
};

// Runs `ootci ARGS`, its output in `log`: how it ended and its wall time in seconds. `*running`
// holds its pid while it runs (it has a process group of its own, so a signal handler that is to
// reach it must send the signal there).
inline TimedRun run_ootci(const std::string& log, const std::vector<std::string>& args,
                          volatile pid_t* running = nullptr) {
  SpawnOptions o;
  o.argv = {binary_dir() + "/ootci"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.output_file = log;
  int64_t start = steady_us();
  Subprocess child = Subprocess::spawn(o);
  if (running) *running = child.pid();
  int status = child.wait();
  if (running) *running = 0;
  return {status, (steady_us() - start) / 1e6};
}

// The wall time in seconds of `ootci ARGS`; throws unless it exits 0.
inline double timed_ootci(const std::string& log, const std::vector<std::string>& args) {
  TimedRun run = run_ootci(log, args);
  if (run.status != 0)
    throw Error(fmt::format("ootci {} exited with status {}; see {}", args.at(0), run.status, log));
  return run.seconds;
}

}  // namespace ootci::bench
