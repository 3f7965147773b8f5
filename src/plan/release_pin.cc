#include "plan/release_pin.h"

#include <regex>

namespace ootci {

std::optional<std::string> pinned_minor(const std::string& pin) {
  static const std::regex kMajorMinor(R"((\d+)\.(\d+))");
  std::smatch m;
  if (!std::regex_search(pin, m, kMajorMinor)) return std::nullopt;
  return m[1].str() + "." + m[2].str();
}

}  // namespace ootci
