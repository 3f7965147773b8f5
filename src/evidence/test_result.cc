#include "evidence/test_result.h"

#include "base/enum_names.h"
#include "base/text.h"

namespace ootci {
namespace {

constexpr EnumName<Outcome> kOutcomeNames[] = {
    {Outcome::passed, "passed"},   {Outcome::failed, "failed"},   {Outcome::error, "error"},
    {Outcome::skipped, "skipped"}, {Outcome::xfailed, "xfailed"}, {Outcome::xpassed, "xpassed"},
};

}  // namespace

std::string to_string(Outcome outcome) {
  return std::string(enum_text(kOutcomeNames, outcome));
}

std::optional<Outcome> parse_outcome(std::string_view text) {
  return enum_parse(kOutcomeNames, text);
}

Outcome outcome_or_error(std::string_view text) {
  return parse_outcome(text).value_or(Outcome::error);
}

bool is_failure(Outcome outcome) {
  return outcome == Outcome::failed || outcome == Outcome::error;
}

std::string failed_verb(Outcome outcome) {
  return outcome == Outcome::error ? "errored" : "failed";
}

bool is_pass(Outcome outcome) {
  return outcome == Outcome::passed || outcome == Outcome::xpassed;
}

Seen classify(const TestResult& r) {
  switch (r.outcome) {
    case Outcome::passed:
      return r.flaky ? Seen::rerun_pass : Seen::pass;
    case Outcome::xpassed:
      return Seen::pass;
    case Outcome::failed:
    case Outcome::error:
      if (r.error_class == kStrictXpassError) return Seen::pass;
      // A device daemon that died under the test is a crash of the device's, not a result.
      if (r.error_class.starts_with("SIG") || r.error_class == kHelperDiedError) return Seen::crash;
      if (r.error_class == kTimeoutError) return Seen::hang;
      return Seen::fail;
    case Outcome::xfailed:
      return r.mode == TestMode::xfail || r.mode == TestMode::xfail_strict ? Seen::fail
                                                                           : Seen::upstream_xfail;
    case Outcome::skipped:
      return Seen::skipped;
  }
  return Seen::skipped;
}

std::string error_or_outcome(const TestResult& r) {
  return r.error_class.empty() ? to_string(r.outcome) : r.error_class;
}

}  // namespace ootci

namespace ootci {

std::string to_string(FailureCause cause) {
  switch (cause) {
    case FailureCause::missing_kernel:
      return "missing kernel";
    case FailureCause::wrong_result:
      return "wrong result";
    case FailureCause::crash:
      return "crash";
    case FailureCause::hang:
      return "hang";
    case FailureCause::other:
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
    case Seen::crash:
      return FailureCause::crash;
    case Seen::hang:
      return FailureCause::hang;
    case Seen::fail:
      break;
    default:
      return std::nullopt;
  }
  if (says_unimplemented(r)) return FailureCause::missing_kernel;
  // torch.testing's comparison: "Tensor-likes are not close!", "Scalars are not equal!".
  std::string m = lower(r.message);
  if (contains(r.error_class, "AssertionError") &&
      (contains(m, "are not close") || contains(m, "are not equal") ||
       contains(m, "mismatched elements")))
    return FailureCause::wrong_result;
  return FailureCause::other;
}

}  // namespace ootci
