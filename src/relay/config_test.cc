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

TEST(RelayConfig, CallbackKeys) {
  RelayConfig c = load_relay_config(write_config(R"(allowlist: a
oidc:
  leeway_s: 30
  issuers:
    - issuer: https://agent.buildkite.com
      provider: buildkite
callback:
  rate_limit_per_min: 60
  require_callback_token: true
  max_body_bytes: 4096
sweeper: {interval_s: 5, zombie_timeout_s: 50, job_retention_days: 30}
hud_forward: {url: "https://hud.example/api", key_env: HUD_KEY}
nightly: {validate_sha: false}
hud:
  l4_criteria: {at_l3_days: 60, pass_rate_percent: 99.5, timeout_rate_percent: 0.5}
)"));
  ASSERT_EQ(c.oidc_issuers.size(), 1u);
  EXPECT_EQ(c.oidc_issuers[0].jwks_url, "https://agent.buildkite.com/.well-known/jwks");
  EXPECT_EQ(c.oidc_issuers[0].audience, "pytorch-cross-repo-ci-relay");
  EXPECT_EQ(c.oidc_issuers[0].provider, "buildkite");
  EXPECT_EQ(c.oidc_leeway_s, 30);
  EXPECT_EQ(c.callback.rate_limit_per_min, 60);
  EXPECT_TRUE(c.callback.require_callback_token);
  EXPECT_EQ(c.callback.max_body_bytes, 4096);
  EXPECT_EQ(c.sweeper.interval_s, 5);
  EXPECT_EQ(c.sweeper.zombie_timeout_s, 50);
  EXPECT_EQ(c.sweeper.job_retention_days, 30);
  EXPECT_EQ(c.hud.l4_criteria.at_l3_days, 60);
  EXPECT_EQ(c.hud.l4_criteria.pass_rate_percent, 99.5);
  EXPECT_EQ(c.hud.l4_criteria.timeout_rate_percent, 0.5);
  EXPECT_FALSE(c.hud.l4_criteria.e2e_p50_hours);
  EXPECT_TRUE(c.hud.l4_criteria.any());
  EXPECT_EQ(c.hud_forward.key_env, "HUD_KEY");
  EXPECT_FALSE(c.nightly.validate_sha);
}

TEST(RelayConfig, DefaultsMatchCrcr) {
  RelayConfig c = load_relay_config(write_config(
      "allowlist: https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml\n"));
  EXPECT_EQ(c.upstream_repo, "pytorch/pytorch");
  EXPECT_EQ(c.github.api_url, "https://api.github.com");
  EXPECT_EQ(c.store.substr(c.store.size() - 15), "/ootci-relay.db");
  EXPECT_EQ(c.allowlist, "https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml");
  ASSERT_EQ(c.oidc_issuers.size(), 1u);
  EXPECT_EQ(c.oidc_issuers[0].issuer, "https://token.actions.githubusercontent.com");
  EXPECT_EQ(c.oidc_issuers[0].audience, "pytorch-cross-repo-ci-relay");
  EXPECT_EQ(c.callback.rate_limit_per_min, 100);
  EXPECT_EQ(c.callback.max_body_bytes, 2 * 1024 * 1024);
  EXPECT_FALSE(c.callback.require_callback_token);
  EXPECT_EQ(c.sweeper.interval_s, 600);
  EXPECT_EQ(c.sweeper.zombie_timeout_s, 21600);
  EXPECT_EQ(c.sweeper.job_retention_days, 90);
  EXPECT_FALSE(c.hud.l4_criteria.any());  // upstream defines none
  EXPECT_TRUE(c.nightly.validate_sha);
}

TEST(RelayConfig, LevelLifecycleKeys) {
  RelayConfig c = load_relay_config(write_config(R"(allowlist: a
listen: 0.0.0.0:9000
oidc:
  issuers:
    - issuer: https://gitlab.example.com
      provider: gitlab
      audience: crcr
    - issuer: https://oidc.circleci.com/org/o-1
      provider: circleci
      audience: o-1
hud:
  levels:
    promotion_window_days: 21
    e2e_p50_hours: 2.5
    pass_rate_percent: 95
    pass_rate: excluding_upstream
nightly: {stale_after_h: 48}
sync_levels:
  interval_s: 3600
  hud_url: https://relay.example/
  always_cc: [atalman]
redelivery: {interval_s: 60, max_age_s: 7200, max_per_pass: 10, max_attempts: 2}
)"));
  EXPECT_EQ(c.oidc_issuers[0].jwks_url, "https://gitlab.example.com/oauth/discovery/keys");
  EXPECT_EQ(c.oidc_issuers[1].jwks_url,
            "https://oidc.circleci.com/org/o-1/.well-known/jwks-pub.json");
  EXPECT_EQ(c.hud.levels.promotion_window_days, 21);
  EXPECT_EQ(c.hud.levels.demotion_window_days, 7);  // upstream's, unless set
  EXPECT_EQ(c.hud.levels.e2e_p50_hours, 2.5);
  EXPECT_EQ(c.hud.levels.pass_rate_percent, 95);
  EXPECT_EQ(c.hud.levels.tenure_at_l2_days, 30);
  EXPECT_TRUE(c.hud.levels.pass_rate_excludes_upstream);
  EXPECT_EQ(c.nightly.stale_after_h, 48);
  EXPECT_EQ(c.sync_levels.interval_s, 3600);
  EXPECT_EQ(c.sync_levels.hud_url, "https://relay.example");
  EXPECT_EQ(c.sync_levels.always_cc, std::vector<std::string>{"atalman"});
  EXPECT_EQ(c.sync_levels.allowlist_path, ".github/allowlist.yml");
  EXPECT_EQ(c.redelivery.max_age_s, 7200);
  EXPECT_EQ(c.redelivery.max_attempts, 2);
  RelayConfig d = load_relay_config(write_config("allowlist: a\n"));
  EXPECT_EQ(d.sync_levels.hud_url, "http://127.0.0.1:8080");
  EXPECT_EQ(d.sync_levels.interval_s, 0);
  EXPECT_FALSE(d.hud.levels.pass_rate_excludes_upstream);
  EXPECT_EQ(d.nightly.stale_after_h, 36);
  EXPECT_TRUE(d.redelivery.enabled);
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
      {"allowlist: a\noidc:\n  issuers:\n    - jwks_url: x\n",
       "relay.yaml:4:7: oidc.issuers[0].issuer: required"},
      {"allowlist: a\nhud:\n  levels:\n    pass_rate_percent: 120\n",
       "relay.yaml:4:24: hud.levels.pass_rate_percent: must be from 0 to 100"},
      {"allowlist: a\nhud:\n  levels:\n    pass_rate: clean\n",
       "relay.yaml:4:16: hud.levels.pass_rate: expected raw or excluding_upstream"},
      {"allowlist: a\nhud:\n  levels:\n    windw_days: 3\n",
       "relay.yaml:4:5: hud.levels.windw_days: unknown key"},
      {"allowlist: a\nhud:\n  levels: {demotion_window_days: 0}\n",
       "relay.yaml:3:34: hud.levels.demotion_window_days: must be between 1 and 90"},
      {"allowlist: a\nredelivery: {max_age_s: 999999}\n",
       "relay.yaml:2:25: redelivery.max_age_s: must be between 60 and 259200"},
      {"allowlist: a\noidc:\n  issuers:\n    - issuer: x\n      provider: jenkins\n",
       "relay.yaml:5:17: oidc.issuers[0].provider: expected github, buildkite, gitlab or circleci"},
      {"allowlist: a\ncallback:\n  rate_limit_per_min: 0\n",
       "relay.yaml:3:23: callback.rate_limit_per_min: must be between 1 and 1000000"},
      {"allowlist: a\ncallback:\n  require_callback_token: maybe\n",
       "relay.yaml:3:27: callback.require_callback_token: expected true or false"},
      {"allowlist: a\nhud_forward:\n  url: https://hud\n",
       "relay.yaml:3:3: hud_forward.key_env: required when url is set"},
      {"allowlist: a\nsweeper:\n  every: 5\n", "relay.yaml:3:3: sweeper.every: unknown key"},
      {"allowlist: a\nhud:\n  l4_criteria:\n    pass_rate: 99\n",
       "relay.yaml:4:5: hud.l4_criteria.pass_rate: unknown key"},
      {"allowlist: a\nhud:\n  l4_criteria:\n    at_l3_days: -1\n",
       "relay.yaml:4:17: hud.l4_criteria.at_l3_days: must be >= 0"},
  };
  for (const auto& c : cases) EXPECT_EQ(load_error(c.text), c.error) << c.text;
}

// The Debian package's /etc/ootci/relay.yaml.example (packaging/) loads, and keeps everything the
// service writes under /var/lib/ootci: the service cannot write /etc/ootci.
TEST(RelayConfig, ThePackagedExampleLoads) {
  RelayConfig c = load_relay_config(source_dir() + "/packaging/relay.yaml.example");
  EXPECT_EQ(c.store, "sqlite:/var/lib/ootci/relay.db");
  EXPECT_EQ(c.webhook_secret_env, "GITHUB_APP_SECRET");
  EXPECT_EQ(c.downstreams.at("acme/backend").transport, "webhook");
}

}  // namespace
}  // namespace ootci
