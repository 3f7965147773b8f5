#include "base/host_port.h"

#include <algorithm>

namespace ootci {

std::optional<HostPort> parse_host_port(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.size() - colon - 1 > 5)
    return std::nullopt;
  std::string digits = text.substr(colon + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int port = std::stoi(digits);
  if (port > 65535) return std::nullopt;
  return HostPort{text.substr(0, colon), port};
}

}  // namespace ootci
