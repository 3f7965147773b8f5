#include "dispatch/agent_config.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/yaml_doc.h"

namespace fs = std::filesystem;

namespace ootci {

std::string AgentConfig::listen_host() const {
  return listen.substr(0, listen.rfind(':'));
}

int AgentConfig::listen_port() const {
  return std::stoi(listen.substr(listen.rfind(':') + 1));
}

AgentConfig load_agent_config(const std::string& path) {
  YamlDoc doc = load_yaml_file(path);
  YamlMap root(doc, doc.root, "");
  AgentConfig c;
  c.path = path;
  fs::path dir = fs::absolute(path).parent_path();
  auto absolute_in_dir = [&](const std::string& p) {
    return (dir / p).lexically_normal().string();
  };

  if (auto v = root.str("listen")) {
    size_t colon = v->rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      try {
        port = std::stoi(v->substr(colon + 1));
      } catch (...) {
      }
    }
    if (port < 0 || port > 65535)
      yaml_fail(doc, root.raw("listen"), "listen", "expected host:port");
    c.listen = *v;
  }
  if (auto v = root.str("secret_env")) c.secret_env = *v;
  if (auto v = root.str("backend")) c.backend = absolute_in_dir(*v);
  if (c.backend.empty())
    yaml_fail(doc, doc.root, "backend", "required key is missing (ootci.yaml)");
  c.state = absolute_in_dir(root.str("state").value_or(c.state));
  c.jobs_dir = root.str("jobs_dir") ? absolute_in_dir(*root.str("jobs_dir"))
                                    : (fs::path(c.state).parent_path() / "agent-jobs").string();
  if (auto v = root.integer("concurrency", 1, 64)) c.concurrency = static_cast<int>(*v);
  if (auto v = root.str("job_name")) c.job_name = *v;
  if (auto v = root.str_list("prepare_command")) c.prepare_command = *v;
  if (auto v = root.str("public_url")) c.public_url = *v;
  if (c.public_url.empty()) c.public_url = "http://" + c.listen;
  while (!c.public_url.empty() && c.public_url.back() == '/') c.public_url.pop_back();
  root.finish();
  return c;
}

}  // namespace ootci
