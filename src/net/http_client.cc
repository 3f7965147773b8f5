#include "net/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>

#include "net/ca_bundle.h"

namespace ootci {

std::string Url::origin() const {
  return fmt::format("{}://{}:{}", scheme, host, port);
}

std::optional<Url> parse_url(const std::string& text) {
  Url u;
  size_t p = text.find("://");
  if (p == std::string::npos) return std::nullopt;
  u.scheme = text.substr(0, p);
  if (u.scheme != "http" && u.scheme != "https") return std::nullopt;
  std::string rest = text.substr(p + 3);
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    u.host = hostport.substr(0, colon);
    std::string port = hostport.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), u.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || u.port <= 0 || u.port > 65535)
      return std::nullopt;
  } else {
    u.host = hostport;
    u.port = u.scheme == "https" ? 443 : 80;
  }
  if (u.host.empty()) return std::nullopt;
  return u;
}

std::string HttpResult::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  return "";
}

HttpResult http_send(const HttpRequest& req) {
  HttpResult out;
  auto url = parse_url(req.url);
  if (!url) {
    out.error = "invalid URL: " + req.url;
    return out;
  }
  httplib::Client client(url->origin());
  if (std::string ca = system_ca_bundle(); !ca.empty()) client.set_ca_cert_path(ca);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(req.timeout_ms / 1000, (req.timeout_ms % 1000) * 1000);
  client.set_read_timeout(req.timeout_ms / 1000, (req.timeout_ms % 1000) * 1000);
  client.set_write_timeout(req.timeout_ms / 1000, (req.timeout_ms % 1000) * 1000);
  httplib::Headers headers(req.headers.begin(), req.headers.end());
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (req.method == "GET") {
    res = client.Get(url->path, headers);
  } else if (req.method == "POST") {
    res = client.Post(url->path, headers, req.body, req.content_type);
  } else if (req.method == "PATCH") {
    res = client.Patch(url->path, headers, req.body, req.content_type);
  } else if (req.method == "PUT") {
    res = client.Put(url->path, headers, req.body, req.content_type);
  } else if (req.method == "DELETE") {
    res = client.Delete(url->path, headers, req.body, req.content_type);
  } else {
    out.error = "unsupported method " + req.method;
    return out;
  }
  if (!res) {
    out.error = fmt::format("{} {}: {}", req.method, req.url, httplib::to_string(res.error()));
    return out;
  }
  out.status = res->status;
  out.body = res->body;
  out.headers.insert(res->headers.begin(), res->headers.end());
  return out;
}

std::optional<int64_t> retry_after_seconds(const HttpResult& result) {
  std::string v = result.header("Retry-After");
  if (v.empty()) return std::nullopt;
  int64_t secs = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (ec != std::errc() || secs < 0) return std::nullopt;
  return secs;
}

}  // namespace ootci
