#pragma once
// "host:port" as the relay and the agent take their `listen` setting.
#include <optional>
#include <string>

namespace ootci {

struct HostPort {
  std::string host;
  int port = 0;
};

// nullopt unless `text` is a non-empty host, a colon, and a port in 0..65535.
std::optional<HostPort> parse_host_port(const std::string& text);

}  // namespace ootci
