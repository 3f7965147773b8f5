#include "net/reply.h"

#include <httplib.h>

namespace ootci {

void send_reply(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  for (const auto& [k, v] : reply.headers) res.set_header(k, v);
  res.set_content(reply.body.dump(), "application/json");
}

}  // namespace ootci
