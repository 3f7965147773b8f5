#pragma once
#include <memory>
#include <string>

#include "relay/config.h"

namespace ootci {

// `ootci relay serve`: wires the store, allowlist, dispatcher and handlers to one HTTP server.
class RelayServer {
 public:
  explicit RelayServer(RelayConfig config);
  ~RelayServer();
  // Binds, starts the dispatcher, and serves until stop(). Throws if the port cannot be bound.
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ootci
