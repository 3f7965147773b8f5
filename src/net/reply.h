#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace httplib {
struct Response;
}

namespace ootci {

// What a handler answers; the server turns it into HTTP with send_reply. Handlers stay testable
// without sockets. Every JSON answer of every server (relay, HUD, agent) goes through this.
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

// Writes the reply's status, headers and JSON body into an HTTP response.
void send_reply(httplib::Response& res, const Reply& reply);
// A page (HUD, run report), with kPagePolicy as its Content-Security-Policy.
void send_html(httplib::Response& res, int status, const std::string& html);

}  // namespace ootci
