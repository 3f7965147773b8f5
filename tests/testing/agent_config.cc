#include "testing/agent_config.h"

#include <fmt/format.h>

namespace ootci {

std::string reference_backend_yaml(const std::string& backend_dir, const std::string& torch_root,
                                   const std::string& relay_url, const std::string& token_command,
                                   const std::string& backend_env) {
  return fmt::format(R"(backend:
  name: reference
  device_type: privateuseone
  python: /usr/bin/python3
  modules: [ootci_reference_backend]
  pythonpath: [{ref}]
  env: {env}
upstream:
  torch_root: {torch}
  device_root: {ref}
test_configs:
  - {ref}/configs/test_view_ops.yaml
workspace: ws
gate:
  pull_request:
    base_branches: [master]
report:
  callback_url: {relay}/github/callback
  relay: ootci
  token_command: {token}
)",
                     fmt::arg("ref", backend_dir), fmt::arg("torch", torch_root),
                     fmt::arg("env", backend_env), fmt::arg("relay", relay_url),
                     fmt::arg("token", token_command));
}

std::string agent_yaml(int port, const std::string& extra) {
  return fmt::format(
      "listen: 127.0.0.1:{}\nsecret_env: TEST_AGENT_SECRET\nbackend: ootci.yaml\n"
      "state: agent/queue.db\nconcurrency: 1\n{}",
      port, extra);
}

std::string agent_downstream_yaml(const std::string& repo, int port) {
  return fmt::format(
      "downstreams:\n  {}:\n    transport: webhook\n    url: http://127.0.0.1:{}/dispatch\n"
      "    secret_env: TEST_AGENT_SECRET\n",
      repo, port);
}

}  // namespace ootci
