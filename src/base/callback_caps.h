#pragma once
// RFC-0054's caps on a callback's failed_tests_detail and triage_verdict: the relay enforces
// them on what it receives, `ootci report` keeps what it sends within them.
#include <cstddef>

namespace ootci {

constexpr size_t kMaxFailedTests = 1000;
constexpr size_t kMaxTestMessageBytes = 1024;
constexpr size_t kMaxTestStacktraceBytes = 4096;
constexpr size_t kMaxTriageBytes = 16 * 1024;
// The HUD API's body limit (413 above it), and the relay's default: a callback must fit.
constexpr size_t kMaxCallbackBodyBytes = 2 * 1024 * 1024;

}  // namespace ootci
