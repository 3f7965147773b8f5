#include "evidence/test_result.h"

#include "base/enum_names.h"

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
      if (r.error_class == "XPASS(strict)") return Seen::pass;
      if (r.error_class.rfind("SIG", 0) == 0) return Seen::crash;
      if (r.error_class == "Timeout") return Seen::hang;
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
