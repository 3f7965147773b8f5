#pragma once
// What a callback may hold (RFC-0054's caps on failed_tests_detail and triage_verdict, the run
// id's form): the relay enforces them on what it receives, `ootci report` keeps what it sends
// within them.
#include <cctype>
#include <cstddef>
#include <string_view>

namespace ootci {

constexpr size_t kMaxFailedTests = 1000;
constexpr size_t kMaxTestMessageBytes = 1024;
constexpr size_t kMaxTestStacktraceBytes = 4096;
constexpr size_t kMaxTriageBytes = 16 * 1024;
// Upstream CRCR's caps on a triage verdict (test-infra#8803), which it cuts to, not rejects.
constexpr size_t kMaxTriageSummaryChars = 1000;
constexpr size_t kMaxTriageEvidence = 10;
// The HUD API's body limit (413 above it), and the relay's default: a callback must fit.
constexpr size_t kMaxCallbackBodyBytes = 2 * 1024 * 1024;

// workflow.run_id: GitHub's integer, or another CI's id such as a Buildkite build UUID. The
// character set keeps it one segment of the relay's state key.
inline bool is_callback_run_id(std::string_view id) {
  if (id.empty() || id.size() > 64 || !std::isalnum(static_cast<unsigned char>(id[0])))
    return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  return true;
}
constexpr const char* kCallbackRunIdRule =
    "an integer, or an id of at most 64 letters, digits, '-', '_' or '.' starting with a letter or "
    "digit";

}  // namespace ootci
