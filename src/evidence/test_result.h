#pragma once
// One vocabulary for test results (docs/run.md): a result's outcome and mode are parsed once
// where results come in (reporter events, JUnit, the evidence store) and written as text only
// where they go out; every rule in between reads these enums, and whether a result failed,
// crashed, hung or was flaky is asked of classify() alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/test_mode.h"

namespace ootci {

enum class Outcome { kPassed, kFailed, kError, kSkipped, kXfailed, kXpassed };

// Every outcome, in the order reports print them.
inline constexpr Outcome kOutcomes[] = {Outcome::kPassed,  Outcome::kFailed,  Outcome::kError,
                                        Outcome::kSkipped, Outcome::kXfailed, Outcome::kXpassed};

std::string to_string(Outcome outcome);
std::optional<Outcome> parse_outcome(std::string_view text);
// Where a result comes in: an outcome ootci does not know counts as an error, so it can only make
// a run fail, never pass.
Outcome outcome_or_error(std::string_view text);

// failed or error.
bool is_failure(Outcome outcome);
// How a failing outcome reads in a sentence: "errored" or "failed".
std::string failed_verb(Outcome outcome);
// passed or xpassed: a real pass (a skip or an expected failure is not one).
bool is_pass(Outcome outcome);

struct TestResult {
  std::string test_id;  // relpath::Class::name
  std::string file;     // relpath
  std::string cls;      // "" outside a class
  std::string name;
  std::string device;
  std::string dtype;
  std::string op;
  std::optional<TestMode> mode;  // nullopt: unknown (the plan does not list the test)
  Outcome outcome = Outcome::kError;
  double duration_s = 0;
  std::string error_class;
  std::string message;
  int reruns = 0;
  bool flaky = false;
  int64_t finished_ms = 0;
  // The test-suite config name this variant comes from, "Class::method" (the generic class and
  // the template method; "method" outside a class), so evidence maps back to config entries.
  std::string base;
  // Aten ops the variant called on the device ("aten::add.Tensor"), sorted; recorded only by
  // `ootci discover` (the op recorder), empty otherwise. Stored apart from the result row.
  std::vector<std::string> ops;
  // The dtypes of the variant's tensors on the device per op, "aten::add.Tensor:float32"
  // (arguments and results, over all calls), sorted; recorded with `ops`. Empty in evidence
  // recorded before schema 3: the ops' dtypes are then unknown.
  std::vector<std::string> op_dtypes;
  // Of op_dtypes, those reached only while the test generated its inputs (make_tensor, an
  // OpInfo's sample inputs), never in the test's own calls.
  std::vector<std::string> input_op_dtypes;
};

// Error classes that carry meaning: written by the runner and the JUnit reader, read by classify()
// and the judge. A crash's error class is its signal's name ("SIGSEGV").
inline constexpr std::string_view kTimeoutError = "Timeout";            // it hung
inline constexpr std::string_view kStrictXpassError = "XPASS(strict)";  // a strict xfail passed
// A process the test process started (a device daemon) died and the test waited on it.
inline constexpr std::string_view kHelperDiedError = "HelperDied";

// What one result says of its test.
enum class Seen {
  kPass,           // passed or xpassed, or a strict xfail's XPASS(strict) failure
  kRerunPass,      // passed only on a rerun: flaky
  kFail,           // failed or errored, or xfailed where the plan said xfail or xfail_strict
  kCrash,          // failed or errored by killing its process (error class SIG*)
  kHang,           // failed or errored by a timeout (error class Timeout)
  kSkipped,        // skipped
  kUpstreamXfail,  // xfailed where upstream expects it (not the plan's xfail)
};
Seen classify(const TestResult& result);

// Why a failing result failed, as a new device's owner sorts failures: the device has no kernel
// (or no kernel for the dtype), a kernel computed something else than the CPU, the process died,
// the test ran past its limit, or anything else.
enum class FailureCause { kMissingKernel, kWrongResult, kCrash, kHang, kOther };
std::string to_string(FailureCause cause);
// nullopt for a result that did not fail (classify() is not fail, crash or hang).
std::optional<FailureCause> failure_cause(const TestResult& result);
// The error says the device lacks a kernel rather than computing something wrong.
bool says_unimplemented(const TestResult& result);

// What a short reason names of a result: its error class, or its outcome when it has none.
std::string error_or_outcome(const TestResult& result);

}  // namespace ootci
