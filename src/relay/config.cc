#include "relay/config.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/config_path.h"
#include "base/host_port.h"
#include "base/yaml_doc.h"

namespace ootci {

std::string RelayConfig::listen_host() const {
  return parse_host_port(listen)->host;
}
int RelayConfig::listen_port() const {
  return parse_host_port(listen)->port;
}

namespace {

// hud.levels: every threshold and window, each validated where it is written.
void read_levels(const YamlDoc& doc, YamlMap& m, LevelThresholds& t) {
  for (auto [key, field] : {std::pair{"promotion_window_days", &t.promotion_window_days},
                            {"demotion_window_days", &t.demotion_window_days}})
    if (auto v = m.integer(key, 1, 90)) *field = static_cast<int>(*v);
  for (auto [key, field] : {std::pair{"tenure_at_l2_days", &t.tenure_at_l2_days},
                            {"e2e_p50_hours", &t.e2e_p50_hours},
                            {"max_exec_hours", &t.max_exec_hours},
                            {"avg_queue_min", &t.avg_queue_min},
                            {"timeout_rate_percent", &t.timeout_rate_percent},
                            {"pass_rate_percent", &t.pass_rate_percent}}) {
    auto v = m.number(key);
    if (!v) continue;
    bool percent = std::string(key).find("percent") != std::string::npos;
    if (*v < 0 || (percent && *v > 100))
      yaml_fail(doc, m.raw(key), m.child_path(key),
                percent ? "must be from 0 to 100" : "must be >= 0");
    *field = *v;
  }
  if (auto v = m.str("pass_rate")) {
    if (*v != "raw" && *v != "excluding_upstream")
      yaml_fail(doc, m.raw("pass_rate"), m.child_path("pass_rate"),
                "expected raw or excluding_upstream");
    t.pass_rate_excludes_upstream = *v == "excluding_upstream";
  }
  m.finish();
}

// The top-level scalars: where the relay listens, its store, its allowlist and secrets.
void read_top_level(const YamlDoc& doc, YamlMap& root, const std::string& dir, RelayConfig& c) {
  if (auto v = root.str("listen")) {
    if (!parse_host_port(*v)) yaml_fail(doc, root.raw("listen"), "listen", "expected host:port");
    c.listen = *v;
  }
  if (auto v = root.str("upstream_repo")) c.upstream_repo = *v;
  if (auto v = root.str("store")) {
    c.store = *v;
    if (c.store.rfind("sqlite:", 0) == 0) {
      c.store = "sqlite:" + path_in_config_dir(dir, c.store.substr(7));
    } else if (c.store.rfind("postgresql://", 0) != 0 && c.store.rfind("postgres://", 0) != 0) {
      yaml_fail(doc, root.raw("store"), "store", "expected sqlite:PATH or a postgresql:// URI");
    }
  } else {
    c.store = "sqlite:" + path_in_config_dir(dir, "ootci-relay.db");
  }
  if (auto v = root.str("allowlist")) c.allowlist = path_in_config_dir(dir, *v);
  if (c.allowlist.empty()) yaml_fail(doc, doc.root, "allowlist", "required key is missing");
  if (auto v = root.integer("allowlist_ttl_s", 1)) c.allowlist_ttl_s = *v;
  if (auto v = root.str("webhook_secret_env")) c.webhook_secret_env = *v;
  if (auto v = root.str("callback_token_secret_env")) c.callback_token_secret_env = *v;
  if (auto v = root.integer("callback_token_ttl_s", 60)) c.callback_token_ttl_s = *v;
  if (auto v = root.integer("http_threads", 1, 1024)) c.http_threads = static_cast<int>(*v);
}

void read_github(YamlMap& m, const std::string& dir, RelayConfig::Github& g) {
  if (auto v = m.str("api_url")) g.api_url = *v;
  if (auto v = m.integer("app_id", 1)) g.app_id = *v;
  if (auto v = m.str("private_key_file")) g.private_key_file = path_in_config_dir(dir, *v);
  m.finish();
}

void read_downstreams(const YamlDoc& doc, YamlMap& ds, RelayConfig& c) {
  for (const std::string& repo : ds.keys()) {
    auto m = ds.map(repo);
    DownstreamTransport t;
    if (auto v = m->str("transport")) t.transport = *v;
    if (t.transport != "webhook" && t.transport != "github")
      yaml_fail(doc, m->raw("transport"), m->child_path("transport"), "expected webhook or github");
    if (auto v = m->str("url")) t.url = *v;
    if (auto v = m->str("secret_env")) t.secret_env = *v;
    if (t.transport == "webhook" && t.url.empty())
      yaml_fail(doc, m->node(), m->child_path("url"), "required for the webhook transport");
    if (t.transport == "webhook" && t.secret_env.empty())
      yaml_fail(doc, m->node(), m->child_path("secret_env"), "required for the webhook transport");
    m->finish();
    c.downstreams[repo] = t;
  }
}

void read_dispatch(YamlMap& m, DispatchPolicy& d) {
  if (auto v = m.integer("max_attempts", 1, 1000)) d.max_attempts = static_cast<int>(*v);
  if (auto v = m.integer("initial_backoff_ms", 1)) d.initial_backoff_ms = *v;
  if (auto v = m.integer("max_backoff_ms", 1)) d.max_backoff_ms = *v;
  if (auto v = m.integer("deadline_s", 1)) d.deadline_s = *v;
  if (auto v = m.integer("workers", 1, 256)) d.workers = static_cast<int>(*v);
  if (auto v = m.integer("request_timeout_ms", 100)) d.request_timeout_ms = *v;
  if (auto v = m.boolean("synchronous")) d.synchronous = *v;
  m.finish();
}

void read_oidc(const YamlDoc& doc, YamlMap& o, RelayConfig& c) {
  if (auto v = o.integer("leeway_s", 0, 3600)) c.oidc_leeway_s = *v;
  YAML::Node list = o.raw("issuers");
  if (list && !list.IsNull()) {
    if (!list.IsSequence()) yaml_fail(doc, list, "oidc.issuers", "expected a list");
    for (size_t i = 0; i < list.size(); ++i) {
      YamlMap m(doc, list[i], fmt::format("oidc.issuers[{}]", i));
      OidcIssuer issuer;
      issuer.issuer = m.str("issuer").value_or("");
      if (issuer.issuer.empty()) yaml_fail(doc, list[i], m.child_path("issuer"), "required");
      issuer.audience = m.str("audience").value_or("pytorch-cross-repo-ci-relay");
      issuer.provider = m.str("provider").value_or("github");
      if (!default_jwks_path(issuer.provider))
        yaml_fail(doc, m.raw("provider"), m.child_path("provider"),
                  "expected github, buildkite, gitlab or circleci");
      issuer.jwks_url =
          m.str("jwks_url").value_or(issuer.issuer + default_jwks_path(issuer.provider));
      m.finish();
      c.oidc_issuers.push_back(issuer);
    }
  }
  o.finish();
}

void read_callback(YamlMap& m, RelayConfig::Callback& cb) {
  if (auto v = m.integer("rate_limit_per_min", 1, 1000000))
    cb.rate_limit_per_min = static_cast<int>(*v);
  if (auto v = m.boolean("require_callback_token")) cb.require_callback_token = *v;
  if (auto v = m.integer("max_body_bytes", 1024)) cb.max_body_bytes = *v;
  if (auto v = m.boolean("dry_run")) cb.dry_run = *v;
  m.finish();
}

void read_sweeper(YamlMap& m, RelayConfig::Sweeper& s) {
  if (auto v = m.integer("interval_s", 1)) s.interval_s = *v;
  if (auto v = m.integer("zombie_timeout_s", 1)) s.zombie_timeout_s = *v;
  if (auto v = m.integer("job_retention_days", 0, 36500)) s.job_retention_days = *v;
  m.finish();
}

void read_hud(const YamlDoc& doc, YamlMap& m, RelayConfig::Hud& hud) {
  if (auto l4 = m.map("l4_criteria")) {
    L4Criteria& k = hud.l4_criteria;
    for (auto [key, field] : {std::pair{"at_l3_days", &k.at_l3_days},
                              {"pass_rate_percent", &k.pass_rate_percent},
                              {"avg_queue_min", &k.avg_queue_min},
                              {"e2e_p50_hours", &k.e2e_p50_hours},
                              {"overrun_percent", &k.overrun_percent},
                              {"timeout_rate_percent", &k.timeout_rate_percent}}) {
      *field = l4->number(key);
      if (*field && **field < 0) yaml_fail(doc, l4->raw(key), l4->child_path(key), "must be >= 0");
    }
    l4->finish();
  }
  if (auto lv = m.map("levels")) read_levels(doc, *lv, hud.levels);
  m.finish();
}

void read_hud_forward(const YamlDoc& doc, YamlMap& m, RelayConfig::HudForward& f) {
  if (auto v = m.str("url")) f.url = *v;
  if (auto v = m.str("key_env")) f.key_env = *v;
  if (!f.url.empty() && f.key_env.empty())
    yaml_fail(doc, m.node(), m.child_path("key_env"), "required when url is set");
  m.finish();
}

void read_nightly(YamlMap& m, RelayConfig::Nightly& n) {
  if (auto v = m.boolean("validate_sha")) n.validate_sha = *v;
  if (auto v = m.integer("stale_after_h", 1, 24 * 365)) n.stale_after_h = *v;
  m.finish();
}

void read_sync_levels(YamlMap& m, RelayConfig::SyncLevels& s) {
  if (auto v = m.integer("interval_s", 0)) s.interval_s = *v;
  if (auto v = m.str("hud_url")) s.hud_url = *v;
  if (auto v = m.str("base_branch")) s.base_branch = *v;
  if (auto v = m.str("allowlist_path")) s.allowlist_path = *v;
  if (auto v = m.str_list("always_cc")) s.always_cc = *v;
  m.finish();
}

void read_redelivery(YamlMap& m, RelayConfig::Redelivery& r) {
  if (auto v = m.boolean("enabled")) r.enabled = *v;
  if (auto v = m.integer("interval_s", 1)) r.interval_s = *v;
  if (auto v = m.integer("max_age_s", 60, 3 * 86400)) r.max_age_s = *v;
  if (auto v = m.integer("max_per_pass", 1, 1000)) r.max_per_pass = static_cast<int>(*v);
  if (auto v = m.integer("max_attempts", 1, 100)) r.max_attempts = static_cast<int>(*v);
  m.finish();
}

}  // namespace

RelayConfig load_relay_config(const std::string& path) {
  YamlDoc doc = load_yaml_file(path);
  YamlMap root(doc, doc.root, "");
  RelayConfig c;
  c.path = path;
  std::string dir = std::filesystem::path(path).parent_path().string();

  read_top_level(doc, root, dir, c);
  if (auto m = root.map("github")) read_github(*m, dir, c.github);
  if (auto m = root.map("downstreams")) read_downstreams(doc, *m, c);
  if (auto m = root.map("dispatch")) read_dispatch(*m, c.dispatch);
  if (auto m = root.map("oidc")) read_oidc(doc, *m, c);
  if (c.oidc_issuers.empty())
    c.oidc_issuers.push_back({"https://token.actions.githubusercontent.com",
                              "https://token.actions.githubusercontent.com/.well-known/jwks",
                              "pytorch-cross-repo-ci-relay", "github"});
  if (auto v = root.str("ci_providers")) c.ci_providers = path_in_config_dir(dir, *v);
  if (auto m = root.map("callback")) read_callback(*m, c.callback);
  if (auto m = root.map("sweeper")) read_sweeper(*m, c.sweeper);
  if (auto m = root.map("hud")) read_hud(doc, *m, c.hud);
  if (auto m = root.map("hud_forward")) read_hud_forward(doc, *m, c.hud_forward);
  if (auto m = root.map("nightly")) read_nightly(*m, c.nightly);
  if (auto m = root.map("sync_levels")) read_sync_levels(*m, c.sync_levels);
  if (c.sync_levels.hud_url.empty()) c.sync_levels.hud_url = "http://" + c.listen;
  while (c.sync_levels.hud_url.size() > 1 && c.sync_levels.hud_url.back() == '/')
    c.sync_levels.hud_url.pop_back();
  if (auto m = root.map("redelivery")) read_redelivery(*m, c.redelivery);
  root.finish();
  return c;
}

}  // namespace ootci
