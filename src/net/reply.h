#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ootci {

// What a handler answers; the server turns it into HTTP. Handlers stay testable without sockets.
struct Reply {
  int status = 200;
  nlohmann::json body;
  std::vector<std::pair<std::string, std::string>> headers;
};

inline Reply json_reply(int status, nlohmann::json body) {
  return {status, std::move(body), {}};
}
inline Reply detail_reply(int status, const std::string& detail) {
  return {status, {{"detail", detail}}, {}};
}

}  // namespace ootci
