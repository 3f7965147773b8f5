#include "net/reply.h"

#include <httplib.h>

#include "base/html_escape.h"

namespace ootci {

void send_reply(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  for (const auto& [k, v] : reply.headers) res.set_header(k, v);
  res.set_content(reply.body.dump(), "application/json");
}

void send_html(httplib::Response& res, int status, const std::string& html) {
  res.status = status;
  res.set_header("Content-Security-Policy", kPagePolicy);
  res.set_content(html, "text/html; charset=utf-8");
}

}  // namespace ootci
