#pragma once
// Runs the real `ootci relay serve` binary as a child process for integration tests and benches.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/subprocess.h"
#include "net/http_client.h"

namespace ootci {

int free_port();

class RelayProcess {
 public:
  // `config_yaml` is written to <dir>/relay.yaml; it should listen on 127.0.0.1:<port>.
  RelayProcess(std::string dir, std::string config_yaml, int port,
               std::map<std::string, std::string> env);
  ~RelayProcess();
  void start();      // spawns and waits until /healthz answers
  void kill_hard();  // SIGKILL, as a crash would
  void stop();       // SIGTERM and wait
  int port() const { return port_; }
  std::string url() const;
  std::string log() const;

 private:
  std::string dir_;
  int port_;
  std::map<std::string, std::string> env_;
  std::optional<Subprocess> proc_;
};

// Sends an upstream webhook signed as GitHub would.
HttpResult send_webhook(const std::string& relay_url, const std::string& event,
                        const std::string& delivery, const std::string& body,
                        const std::string& secret);

}  // namespace ootci
