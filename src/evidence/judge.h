#pragma once
// The judge rule of docs/run.md: whether a run's results make it a success.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

// Every outcome a result can have, in the order reports print them.
inline const std::vector<std::string> kOutcomes = {"passed",  "failed",  "error",
                                                   "skipped", "xfailed", "xpassed"};

// failed or error.
bool is_failure(const std::string& outcome);

// A result that makes the run fail.
struct FailingTest {
  std::string test_id;
  std::string mode;
  std::string outcome;
  std::string error_class;
  std::string message;
  bool newly = false;  // not failing in the last green run (always false without one)
};

struct Verdict {
  std::string conclusion;            // success | failure
  std::vector<std::string> reasons;  // one line per violated clause; empty on success
  std::map<std::pair<std::string, std::string>, int> counts;  // (mode, outcome) -> results
  std::vector<FailingTest> failing;  // newly failing first, then by test id
  std::vector<std::string> flaky;    // passed on a rerun, by test id
  bool compared_to_green = false;    // a last green run was given, so `newly` means something
  bool success() const { return conclusion == "success"; }
};

// The last green run of the same backend and config hash to compare `run` with: never `run`
// itself, which may be green already.
std::optional<RunInfo> last_green_before(EvidenceStore& store, const RunInfo& run);

// `last_green` is the last green run's results for the same backend and config_hash, or null.
Verdict judge(const std::vector<TestResult>& results, const std::vector<TestResult>* last_green);

// The reasons, a table of counts per mode and outcome, the failing tests and the flaky ones.
std::string format_verdict(const Verdict& verdict);

}  // namespace ootci
