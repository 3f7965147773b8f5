#pragma once
// How long one test may run before it is killed as a hang (docs/run.md, "Test limits"): a
// multiple of the time the evidence recorded for it, between a floor and a cap; without a
// record, the cap (test_timeout_s), or in discovery a shorter default, since there everything is
// new and a hang would otherwise hold a worker for the cap.
#include <map>
#include <optional>
#include <string>

#include "plan/backend_config.h"

namespace ootci {

struct TestLimit {
  int seconds = 0;
  std::string why;  // how it was chosen, for the error of a test that ran past it
};

TestLimit test_limit(const RunSettings& run, std::optional<double> recorded_s, bool discovery);

// The limits of a run's tests, from the recorded durations of earlier runs.
class TestLimits {
 public:
  TestLimits(RunSettings run, std::map<std::string, double> recorded, bool discovery)
      : run_(std::move(run)), recorded_(std::move(recorded)), discovery_(discovery) {}
  TestLimit of(const std::string& test_id) const;

 private:
  RunSettings run_;
  std::map<std::string, double> recorded_;
  bool discovery_;
};

}  // namespace ootci
