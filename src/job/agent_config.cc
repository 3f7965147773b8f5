#include "job/agent_config.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/config_path.h"
#include "base/host_port.h"
#include "base/yaml_doc.h"

namespace fs = std::filesystem;

namespace ootci {

std::string AgentConfig::listen_host() const {
  return parse_host_port(listen)->host;
}

int AgentConfig::listen_port() const {
  return parse_host_port(listen)->port;
}

AgentConfig load_agent_config(const std::string& path) {
  YamlDoc doc = load_yaml_file(path);
  YamlMap root(doc, doc.root, "");
  AgentConfig c;
  c.path = path;
  std::string dir = fs::absolute(path).parent_path().string();

  if (auto v = root.str("listen")) {
    if (!parse_host_port(*v)) yaml_fail(doc, root.raw("listen"), "listen", "expected host:port");
    c.listen = *v;
  }
  if (auto v = root.str("secret_env")) c.secret_env = *v;
  if (auto v = root.str("backend")) c.backend = path_in_config_dir(dir, *v);
  if (c.backend.empty())
    yaml_fail(doc, doc.root, "backend", "required key is missing (ootci.yaml)");
  c.state = path_in_config_dir(dir, root.str("state").value_or(c.state));
  c.jobs_dir = root.str("jobs_dir") ? path_in_config_dir(dir, *root.str("jobs_dir"))
                                    : (fs::path(c.state).parent_path() / "agent-jobs").string();
  if (auto v = root.integer("concurrency", 1, 64)) c.concurrency = static_cast<int>(*v);
  if (auto v = root.str("job_name")) c.job_name = *v;
  if (auto v = root.str_list("prepare_command")) c.prepare_command = *v;
  if (auto v = root.str("public_url")) c.public_url = *v;
  if (auto v = root.boolean("attribute")) c.attribute = *v;
  if (c.public_url.empty()) c.public_url = "http://" + c.listen;
  while (!c.public_url.empty() && c.public_url.back() == '/') c.public_url.pop_back();
  root.finish();
  return c;
}

}  // namespace ootci
