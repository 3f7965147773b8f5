#pragma once
#include <map>
#include <optional>
#include <string>

namespace ootci {

struct Url {
  std::string scheme;  // http or https
  std::string host;
  int port = 0;
  std::string path;            // starts with '/'
  std::string origin() const;  // scheme://host:port
};
std::optional<Url> parse_url(const std::string& text);

struct HttpResult {
  int status = 0;  // 0 when no HTTP response arrived (network error or timeout)
  std::string body;
  std::multimap<std::string, std::string> headers;
  std::string error;  // set when status == 0
  std::string header(const std::string& name) const;
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::multimap<std::string, std::string> headers;
  std::string body;
  std::string content_type = "application/json";
  int timeout_ms = 20000;  // the same 20 s budget CRCR gives PyGithub
};

// The one HTTP client of the project (cpp-httplib underneath).
HttpResult http_send(const HttpRequest& request);

// Parses a Retry-After value in seconds (the delta form GitHub sends); nullopt if absent/invalid.
std::optional<int64_t> retry_after_seconds(const HttpResult& result);

}  // namespace ootci
