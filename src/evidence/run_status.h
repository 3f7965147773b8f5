#pragma once
// A run's words: its status in the evidence store and its conclusion, as GitHub's check runs and
// CRCR's callback spell them. Parsed once where they come in (the evidence store, the agent's
// queue, a command line) and written once where they go out (the store, reports, callbacks);
// everything between compares these enums.
#include <optional>
#include <string>
#include <string_view>

namespace ootci {

enum class RunStatus { kRunning, kFinished, kInterrupted };

std::string to_string(RunStatus status);
std::optional<RunStatus> parse_run_status(std::string_view text);

// GitHub's check-run conclusions, which the relay passes on as a backend sends them. ootci's own
// runs conclude success or failure, a stopped one cancelled.
enum class Conclusion {
  kSuccess,
  kFailure,
  kCancelled,
  kTimedOut,
  kNeutral,
  kSkipped,
  kActionRequired,
  kStale,
};

std::string to_string(Conclusion conclusion);
// "" for none: a run that has not concluded (the evidence store's and the agent queue's text).
std::string to_string(const std::optional<Conclusion>& conclusion);
std::optional<Conclusion> parse_conclusion(std::string_view text);
// Throws the Error of a stored conclusion that is not one: `what` names the stored record.
[[noreturn]] void throw_unknown_conclusion(std::string_view what, std::string_view text);
// A conclusion as a store keeps it: "" is none; any other text must be a conclusion, or the read
// stops with an Error naming the stored record. `what()` gives that name, called only then, so
// reading a valid row formats nothing.
template <typename What>
std::optional<Conclusion> parse_stored_conclusion(std::string_view text, What&& what) {
  if (text.empty()) return std::nullopt;
  if (auto c = parse_conclusion(text)) return c;
  throw_unknown_conclusion(what(), text);
}
// "success, failure, ...": every conclusion, for error messages.
std::string conclusion_names();

}  // namespace ootci
