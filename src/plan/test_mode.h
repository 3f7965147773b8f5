#pragma once
// The mode a test-suite config gives a test (docs/plan.md): text in YAML, the plan JSON, reporter
// events and the evidence store; this enum everywhere in between.
#include <optional>
#include <string>
#include <string_view>

namespace ootci {

enum class TestMode { mandatory_success, xfail, xfail_strict, skip };

// Every mode, in the order reports list them.
inline constexpr TestMode kTestModes[] = {TestMode::mandatory_success, TestMode::xfail,
                                          TestMode::xfail_strict, TestMode::skip};

std::string to_string(TestMode mode);
std::optional<TestMode> parse_test_mode(std::string_view text);

// A result's mode as text: "" when unknown (a test the plan does not list, or foreign JUnit).
std::string mode_text(std::optional<TestMode> mode);

}  // namespace ootci
