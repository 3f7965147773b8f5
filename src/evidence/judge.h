#pragma once
// The judge rule of docs/run.md: whether a run's results make it a success.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evidence/run_status.h"
#include "evidence/test_result.h"

namespace ootci {

// A result that makes the run fail.
struct FailingTest {
  std::string test_id;
  std::optional<TestMode> mode;
  Outcome outcome = Outcome::kError;
  std::string error_class;
  std::string message;
  bool newly = false;  // not failing in the last green run (always false without one)
};

struct Verdict {
  Conclusion conclusion = Conclusion::kSuccess;  // success or failure
  std::vector<std::string> reasons;              // one line per violated clause; empty on success
  std::map<std::pair<std::optional<TestMode>, Outcome>, int> counts;  // (mode, outcome) -> results
  std::vector<FailingTest> failing;  // newly failing first, then by test id
  std::vector<std::string> flaky;    // passed on a rerun, by test id
  bool compared_to_green = false;    // a last green run was given, so `newly` means something
  bool success() const { return conclusion == Conclusion::kSuccess; }
};

// `last_green` is the last green run's results for the same backend and config_hash, or null.
Verdict judge(const std::vector<TestResult>& results, const std::vector<TestResult>* last_green);

// The reasons, a table of counts per mode and outcome, the failing tests and the flaky ones.
std::string format_verdict(const Verdict& verdict);

}  // namespace ootci
