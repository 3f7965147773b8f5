#pragma once
// The mode a test-suite config gives a test (docs/plan.md): text in YAML, the plan JSON, reporter
// events and the evidence store; this enum everywhere in between.
#include <optional>
#include <string>
#include <string_view>

namespace ootci {

enum class TestMode { kMandatorySuccess, kXfail, kXfailStrict, kSkip };

// Every mode, in the order reports list them.
inline constexpr TestMode kTestModes[] = {TestMode::kMandatorySuccess, TestMode::kXfail,
                                          TestMode::kXfailStrict, TestMode::kSkip};

std::string to_string(TestMode mode);
std::optional<TestMode> parse_test_mode(std::string_view text);

// A result's mode as text: "" when unknown (a test the plan does not list, or foreign JUnit).
std::string mode_text(std::optional<TestMode> mode);

}  // namespace ootci
