#include "relay/config.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string write_config(const std::string& text) {
  std::string path = make_temp_dir() + "/relay.yaml";
  write_file(path, text);
  return path;
}

std::string load_error(const std::string& text, std::string* path_out = nullptr) {
  std::string path = write_config(text);
  if (path_out) *path_out = path;
  try {
    load_relay_config(path);
  } catch (const Error& e) {
    std::string msg = e.what();
    return msg.substr(msg.find("relay.yaml"));
  }
  return "";
}

TEST(RelayConfig, FullConfigLoadsWithResolvedPaths) {
  std::string path = write_config(R"(listen: 127.0.0.1:9000
upstream_repo: pytorch/pytorch
store: sqlite:relay.db
allowlist: allowlist.yml
webhook_secret_env: MY_SECRET
github:
  api_url: http://127.0.0.1:1234
  app_id: 42
  private_key_file: app.pem
downstreams:
  acme/backend:
    transport: webhook
    url: http://127.0.0.1:7000/dispatch
    secret_env: ACME_SECRET
dispatch:
  max_attempts: 5
  initial_backoff_ms: 100
  deadline_s: 60
)");
  RelayConfig c = load_relay_config(path);
  std::string dir = path.substr(0, path.rfind('/'));
  EXPECT_EQ(c.listen_host(), "127.0.0.1");
  EXPECT_EQ(c.listen_port(), 9000);
  EXPECT_EQ(c.store, "sqlite:" + dir + "/relay.db");
  EXPECT_EQ(c.allowlist, dir + "/allowlist.yml");
  EXPECT_EQ(c.github.private_key_file, dir + "/app.pem");
  EXPECT_EQ(c.github.app_id, 42);
  EXPECT_EQ(c.downstreams.at("acme/backend").url, "http://127.0.0.1:7000/dispatch");
  EXPECT_EQ(c.dispatch.max_attempts, 5);
  EXPECT_EQ(c.dispatch.initial_backoff_ms, 100);
  EXPECT_EQ(c.dispatch.deadline_s, 60);
}

TEST(RelayConfig, DefaultsMatchCrcr) {
  RelayConfig c = load_relay_config(write_config(
      "allowlist: https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml\n"));
  EXPECT_EQ(c.upstream_repo, "pytorch/pytorch");
  EXPECT_EQ(c.github.api_url, "https://api.github.com");
  EXPECT_EQ(c.store.substr(c.store.size() - 15), "/ootci-relay.db");
  EXPECT_EQ(c.allowlist, "https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml");
}

TEST(RelayConfig, BadConfigsNameFileLineAndKey) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"allowlist: a\nlisten: 8080\n", "relay.yaml:2:9: listen: expected host:port"},
      {"allowlist: a\nlistne: x:1\n", "relay.yaml:2:1: listne: unknown key"},
      {"allowlist: a\ndispatch:\n  max_attempts: lots\n",
       "relay.yaml:3:17: dispatch.max_attempts: expected an integer"},
      {"allowlist: a\ndispatch:\n  retries: 3\n", "relay.yaml:3:3: dispatch.retries: unknown key"},
      {"allowlist: a\ngithub:\n  app_id: [1]\n",
       "relay.yaml:3:11: github.app_id: expected an integer"},
      {"allowlist: a\nstore: mysql://x\n",
       "relay.yaml:2:8: store: expected sqlite:PATH or a postgresql:// URI"},
      {"allowlist: a\ndownstreams:\n  a/b:\n    transport: carrier-pigeon\n",
       "relay.yaml:4:16: downstreams.a/b.transport: expected webhook or github"},
      {"allowlist: a\ndownstreams:\n  a/b:\n    url: http://x\n",
       "relay.yaml:4:5: downstreams.a/b.secret_env: required for the webhook transport"},
      {"listen: x:1\n", "relay.yaml:1:1: allowlist: required key is missing"},
      {"allowlist: a\ndispatch: 3\n", "relay.yaml:2:11: dispatch: expected a mapping"},
  };
  for (const auto& c : cases) EXPECT_EQ(load_error(c.text), c.error) << c.text;
}

}  // namespace
}  // namespace ootci
