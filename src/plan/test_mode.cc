#include "plan/test_mode.h"

#include "base/enum_names.h"

namespace ootci {
namespace {

constexpr EnumName<TestMode> kTestModeNames[] = {
    {TestMode::kMandatorySuccess, "mandatory_success"},
    {TestMode::kXfail, "xfail"},
    {TestMode::kXfailStrict, "xfail_strict"},
    {TestMode::kSkip, "skip"},
};

}  // namespace

std::string to_string(TestMode mode) {
  return std::string(enum_text(kTestModeNames, mode));
}

std::optional<TestMode> parse_test_mode(std::string_view text) {
  return enum_parse(kTestModeNames, text);
}

std::string mode_text(std::optional<TestMode> mode) {
  return mode ? to_string(*mode) : "";
}

}  // namespace ootci
