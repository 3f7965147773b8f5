#include "run/test_limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ootci {

TestLimit test_limit(const RunSettings& run, std::optional<double> recorded_s, bool discovery) {
  int cap = run.test_timeout_s;
  if (!recorded_s) {
    if (discovery && run.discover_test_timeout_s < cap)
      return {run.discover_test_timeout_s,
              fmt::format("no recorded duration: discover_test_timeout_s={}",
                          run.discover_test_timeout_s)};
    return {cap, fmt::format("test_timeout_s={}", cap)};
  }
  double scaled = run.test_timeout_factor * *recorded_s;
  int floor = std::min(run.test_timeout_floor_s, cap);
  int seconds = static_cast<int>(std::clamp(std::ceil(scaled), double(floor), double(cap)));
  std::string base =
      fmt::format("{:g} × its recorded {:.3g} s", run.test_timeout_factor, *recorded_s);
  if (seconds == floor && scaled < floor)
    return {seconds, fmt::format("{}, raised to test_timeout_floor_s={}", base, floor)};
  if (seconds == cap && scaled > cap)
    return {seconds, fmt::format("{}, capped at test_timeout_s={}", base, cap)};
  return {seconds, base};
}

TestLimit TestLimits::of(const std::string& test_id) const {
  auto it = recorded_.find(test_id);
  return test_limit(run_, it == recorded_.end() ? std::nullopt : std::optional(it->second),
                    discovery_);
}

}  // namespace ootci
