#pragma once
// Text <-> enum through one table per enum, as LLVM's StringSwitch turns text into an enum at the
// boundary: text is parsed once where it comes in and written once where it goes out, and the
// code in between compares enums.
#include <optional>
#include <string_view>
#include <utility>

namespace ootci {

template <typename Enum>
using EnumName = std::pair<Enum, std::string_view>;

// The text of `value` in `names` ("?" when the table lacks it).
template <typename Enum, size_t N>
constexpr std::string_view enum_text(const EnumName<Enum> (&names)[N], Enum value) {
  for (const auto& [e, text] : names)
    if (e == value) return text;
  return "?";
}

// The enum whose text is `text`, or nullopt.
template <typename Enum, size_t N>
constexpr std::optional<Enum> enum_parse(const EnumName<Enum> (&names)[N], std::string_view text) {
  for (const auto& [e, name] : names)
    if (name == text) return e;
  return std::nullopt;
}

}  // namespace ootci
