#include "evidence/run_status.h"

#include <fmt/format.h>

#include "base/enum_names.h"
#include "base/error.h"

namespace ootci {
namespace {

constexpr EnumName<RunStatus> kRunStatusNames[] = {
    {RunStatus::kRunning, "running"},
    {RunStatus::kFinished, "finished"},
    {RunStatus::kInterrupted, "interrupted"},
};

// In the order GitHub's documentation lists them for a check run.
constexpr EnumName<Conclusion> kConclusionNames[] = {
    {Conclusion::kSuccess, "success"},
    {Conclusion::kFailure, "failure"},
    {Conclusion::kCancelled, "cancelled"},
    {Conclusion::kTimedOut, "timed_out"},
    {Conclusion::kNeutral, "neutral"},
    {Conclusion::kSkipped, "skipped"},
    {Conclusion::kActionRequired, "action_required"},
    {Conclusion::kStale, "stale"},
};

}  // namespace

std::string to_string(RunStatus status) {
  return std::string(enum_text(kRunStatusNames, status));
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  return enum_parse(kRunStatusNames, text);
}

std::string to_string(Conclusion conclusion) {
  return std::string(enum_text(kConclusionNames, conclusion));
}

std::string to_string(const std::optional<Conclusion>& conclusion) {
  return conclusion ? to_string(*conclusion) : "";
}

std::optional<Conclusion> parse_conclusion(std::string_view text) {
  return enum_parse(kConclusionNames, text);
}

void throw_unknown_conclusion(std::string_view what, std::string_view text) {
  throw Error(fmt::format("{}: conclusion '{}' is not one of {}", what, text, conclusion_names()));
}

std::string conclusion_names() {
  std::string out;
  for (const auto& [c, text] : kConclusionNames) {
    if (!out.empty()) out += ", ";
    out += text;
  }
  return out;
}

}  // namespace ootci
