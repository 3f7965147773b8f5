#include "evidence/test_result.h"

#include "base/enum_names.h"
#include "base/text.h"

namespace ootci {
namespace {

constexpr EnumName<Outcome> kOutcomeNames[] = {
    {Outcome::kPassed, "passed"},   {Outcome::kFailed, "failed"},   {Outcome::kError, "error"},
    {Outcome::kSkipped, "skipped"}, {Outcome::kXfailed, "xfailed"}, {Outcome::kXpassed, "xpassed"},
};

}  // namespace

std::string to_string(Outcome outcome) {
  return std::string(enum_text(kOutcomeNames, outcome));
}

std::optional<Outcome> parse_outcome(std::string_view text) {
  return enum_parse(kOutcomeNames, text);
}

Outcome outcome_or_error(std::string_view text) {
  return parse_outcome(text).value_or(Outcome::kError);
}

bool is_failure(Outcome outcome) {
  return outcome == Outcome::kFailed || outcome == Outcome::kError;
}

std::string failed_verb(Outcome outcome) {
  return outcome == Outcome::kError ? "errored" : "failed";
}

bool is_pass(Outcome outcome) {
  return outcome == Outcome::kPassed || outcome == Outcome::kXpassed;
}

Seen classify(const TestResult& r) {
  switch (r.outcome) {
    case Outcome::kPassed:
      return r.flaky ? Seen::kRerunPass : Seen::kPass;
    case Outcome::kXpassed:
      return Seen::kPass;
    case Outcome::kFailed:
    case Outcome::kError:
      if (r.error_class == kStrictXpassError) return Seen::kPass;
      // A device daemon that died under the test is a crash of the device's, not a result.
      if (r.error_class.starts_with("SIG") || r.error_class == kHelperDiedError)
        return Seen::kCrash;
      if (r.error_class == kTimeoutError) return Seen::kHang;
      return Seen::kFail;
    case Outcome::kXfailed:
      return r.mode == TestMode::kXfail || r.mode == TestMode::kXfailStrict ? Seen::kFail
                                                                            : Seen::kUpstreamXfail;
    case Outcome::kSkipped:
      return Seen::kSkipped;
  }
  return Seen::kSkipped;
}

std::string error_or_outcome(const TestResult& r) {
  return r.error_class.empty() ? to_string(r.outcome) : r.error_class;
}

}  // namespace ootci

namespace ootci {

std::string to_string(FailureCause cause) {
  switch (cause) {
    case FailureCause::kMissingKernel:
      return "missing kernel";
    case FailureCause::kWrongResult:
      return "wrong result";
    case FailureCause::kCrash:
      return "crash";
    case FailureCause::kHang:
      return "hang";
    case FailureCause::kOther:
      break;
  }
  return "other";
}

bool says_unimplemented(const TestResult& r) {
  std::string m = lower(r.message);
  return contains(r.error_class, "NotImplementedError") || contains(m, "could not run") ||
         contains(m, "not implemented") || contains(m, "switched off") ||
         contains(m, "not supported") || contains(m, "not handled");
}

std::optional<FailureCause> failure_cause(const TestResult& r) {
  switch (classify(r)) {
    case Seen::kCrash:
      return FailureCause::kCrash;
    case Seen::kHang:
      return FailureCause::kHang;
    case Seen::kFail:
      break;
    default:
      return std::nullopt;
  }
  if (says_unimplemented(r)) return FailureCause::kMissingKernel;
  // torch.testing's comparison: "Tensor-likes are not close!", "Scalars are not equal!".
  std::string m = lower(r.message);
  if (contains(r.error_class, "AssertionError") &&
      (contains(m, "are not close") || contains(m, "are not equal") ||
       contains(m, "mismatched elements")))
    return FailureCause::kWrongResult;
  return FailureCause::kOther;
}

}  // namespace ootci
