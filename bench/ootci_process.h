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

// Runs `ootci ARGS`, its output in `log`; the wall time in seconds. Throws unless it exits 0.
inline double timed_ootci(const std::string& log, const std::vector<std::string>& args) {
  SpawnOptions o;
  o.argv = {binary_dir() + "/ootci"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.output_file = log;
  int64_t start = steady_us();
  int status = Subprocess::spawn(o).wait();
  if (status != 0)
    throw Error(fmt::format("ootci {} exited with status {}; see {}", args.at(0), status, log));
  return (steady_us() - start) / 1e6;
}

}  // namespace ootci::bench
