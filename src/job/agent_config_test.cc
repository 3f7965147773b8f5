#include "job/agent_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string config_error_of(const std::string& text) {
  std::string dir = make_temp_dir();
  write_file(dir + "/agent.yaml", text);
  try {
    load_agent_config(dir + "/agent.yaml");
  } catch (const Error& e) {
    std::string what = e.what();
    return what.substr(what.find("agent.yaml"));
  }
  return "";
}

TEST(AgentConfig, RelativePathsAreResolvedAgainstTheFile) {
  std::string dir = make_temp_dir();
  write_file(dir + "/agent.yaml",
             "listen: 0.0.0.0:9000\nbackend: ../b/ootci.yaml\nstate: q/agent.db\nconcurrency: 3\n"
             "prepare_command: [./prepare.sh, --fast]\nattribute: true\n");
  AgentConfig c = load_agent_config(dir + "/agent.yaml");
  EXPECT_TRUE(c.attribute);
  EXPECT_EQ(c.listen_host(), "0.0.0.0");
  EXPECT_EQ(c.listen_port(), 9000);
  EXPECT_EQ(c.backend, std::filesystem::path(dir).parent_path().string() + "/b/ootci.yaml");
  EXPECT_EQ(c.state, dir + "/q/agent.db");
  EXPECT_EQ(c.jobs_dir, dir + "/q/agent-jobs");
  EXPECT_EQ(c.concurrency, 3);
  EXPECT_EQ(c.prepare_command, (std::vector<std::string>{"./prepare.sh", "--fast"}));
  EXPECT_EQ(c.public_url, "http://0.0.0.0:9000");
  EXPECT_EQ(c.secret_env, "OOTCI_AGENT_SECRET");
}

TEST(AgentConfig, BadInputNamesFileLineAndKey) {
  EXPECT_EQ(config_error_of("listen: 9000\nbackend: b.yaml\n"),
            "agent.yaml:1:9: listen: expected host:port");
  EXPECT_EQ(config_error_of("listen: 127.0.0.1:1\n"),
            "agent.yaml:1:1: backend: required key is missing (ootci.yaml)");
  EXPECT_NE(config_error_of("backend: b.yaml\nconcurency: 2\n").find("concurency"),
            std::string::npos);
  EXPECT_NE(config_error_of("backend: b.yaml\nconcurrency: 0\n").find("concurrency"),
            std::string::npos);
}

// The Debian package's /etc/ootci/agent.yaml.example (packaging/) loads, and keeps everything the
// service writes under /var/lib/ootci: the service cannot write /etc/ootci.
TEST(AgentConfig, ThePackagedExampleLoads) {
  AgentConfig c = load_agent_config(source_dir() + "/packaging/agent.yaml.example");
  EXPECT_EQ(c.backend, "/var/lib/ootci/backend/ootci.yaml");
  EXPECT_EQ(c.state, "/var/lib/ootci/agent/queue.db");
  EXPECT_EQ(c.jobs_dir, "/var/lib/ootci/agent/jobs");
  EXPECT_EQ(c.secret_env, "OOTCI_AGENT_SECRET");
}

}  // namespace
}  // namespace ootci
