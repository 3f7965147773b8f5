#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "relay/config.h"

namespace httplib {
class Server;
}

namespace ootci {

class Store;
class AllowlistSource;

// Lets another component (the HUD) add read-only routes to the relay's server.
using RouteHook = std::function<void(httplib::Server&, Store&, AllowlistSource&,
                                     std::function<nlohmann::json()> relay_health)>;

// `ootci relay serve`: wires the store, allowlist, outbox sender and handlers to one HTTP server.
class RelayServer {
 public:
  explicit RelayServer(RelayConfig config);
  ~RelayServer();
  // Binds, starts the outbox sender, and serves until stop(). Throws if the port cannot be bound.
  void run();
  void stop();
  void add_routes(RouteHook hook);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ootci
