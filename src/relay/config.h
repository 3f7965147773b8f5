#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "net/oidc.h"

namespace ootci {

struct DispatchPolicy {
  int max_attempts = 10;
  int64_t initial_backoff_ms = 1000;
  int64_t max_backoff_ms = 60000;
  int64_t deadline_s = 3600;
  int workers = 8;
  int64_t request_timeout_ms = 20000;
  // Baseline only: fan out inside the webhook request, once, as CRCR does.
  bool synchronous = false;
};

struct DownstreamTransport {
  std::string transport = "webhook";
  std::string url;
  std::string secret_env;
};

// L4 promotion criteria the HUD measures an L3 repo against. Upstream leaves L4 to PyTorch's Core
// Maintainers (RFC-0050: "to be defined"), so none are set unless the operator sets them.
struct L4Criteria {
  std::optional<double> at_l3_days;            // at L3 for at least this many days
  std::optional<double> pass_rate_percent;     // job success rate over 30 days, at least
  std::optional<double> avg_queue_min;         // average queue over 14 days, below
  std::optional<double> e2e_p50_hours;         // end-to-end P50 over 14 days, below
  std::optional<double> overrun_percent;       // jobs over 3 h in 14 days, below
  std::optional<double> timeout_rate_percent;  // timeouts over 7 days, below
  bool any() const {
    return at_l3_days || pass_rate_percent || avg_queue_min || e2e_p50_hours || overrun_percent ||
           timeout_rate_percent;
  }
};

// What /api/crcr/level-status measures: promotion of an L2 repo to L3 and demotion of an L3 repo
// to L2. Upstream's thresholds and windows by default (test-infra torchci/lib/crcr/
// l3Thresholds.ts); demotion checks end-to-end time, timeouts and pass rate only.
struct LevelThresholds {
  int promotion_window_days = 14;
  int demotion_window_days = 7;
  double tenure_at_l2_days = 30;    // time at L2 since the repo first reached it, at least
  double e2e_p50_hours = 3;         // end-to-end (queue + execution) P50, below
  double max_exec_hours = 3;        // the longest execution, below
  double avg_queue_min = 30;        // average queue time, below
  double timeout_rate_percent = 1;  // timed-out jobs, below
  double pass_rate_percent = 90;    // successful jobs, at least
  // The pass rate the criteria use: upstream's raw rate, or the rate without failures whose triage
  // verdict blames upstream with high confidence (hud.levels.pass_rate: excluding_upstream).
  bool pass_rate_excludes_upstream = false;
};

struct RelayConfig {
  std::string path;  // the file it came from, for messages
  std::string listen = "127.0.0.1:8080";
  std::string upstream_repo = "pytorch/pytorch";
  std::string store = "sqlite:ootci-relay.db";
  std::string allowlist;
  int64_t allowlist_ttl_s = 900;
  std::string webhook_secret_env = "GITHUB_APP_SECRET";
  std::string callback_token_secret_env;  // empty: derived from the webhook secret
  int64_t callback_token_ttl_s = 259200;  // CRCR_STATUS_TTL: 3 days
  int http_threads = 16;
  struct Github {
    std::string api_url = "https://api.github.com";
    int64_t app_id = 0;
    std::string private_key_file;
  } github;
  std::map<std::string, DownstreamTransport> downstreams;
  DispatchPolicy dispatch;

  // Callback half.
  std::vector<OidcIssuer> oidc_issuers;  // default: GitHub Actions
  int64_t oidc_leeway_s = 60;
  std::string ci_providers;  // CRCR ci_providers.yml (Buildkite pipeline → repo), optional
  struct Callback {
    int rate_limit_per_min = 100;
    bool require_callback_token = false;
    int64_t max_body_bytes = 2 * 1024 * 1024;
    // Authenticate, gate and validate, but store nothing: for load-testing a deployment, and the
    // baseline of bench/callback_throughput.
    bool dry_run = false;
  } callback;
  struct Sweeper {
    int64_t interval_s = 600;
    int64_t zombie_timeout_s = 21600;
    // Job rows older than this are pruned (their rollups stay); 0 keeps every row.
    int64_t job_retention_days = 90;
  } sweeper;
  struct Hud {
    L4Criteria l4_criteria;
    LevelThresholds levels;
  } hud;
  struct HudForward {
    std::string url;  // e.g. https://hud.pytorch.org/api; empty: no forwarding
    std::string key_env;
  } hud_forward;
  struct Nightly {
    bool validate_sha = true;
    int64_t stale_after_h =
        36;  // a backend's newest nightly older than this is degraded (RFC-0056)
  } nightly;
  // Demotion PRs on the upstream repo (`ootci relay sync-levels`, and on a schedule here).
  struct SyncLevels {
    int64_t interval_s = 0;  // 0: only the command runs it
    std::string hud_url;     // the HUD the PR body links to; default http://<listen>
    std::string base_branch = "main";
    std::string allowlist_path = ".github/allowlist.yml";
    std::vector<std::string> always_cc;  // cc'd on every demotion PR, besides the repo's oncalls
  } sync_levels;
  // Webhooks answered 503 (or not at all) are redelivered through the App's hook deliveries.
  struct Redelivery {
    bool enabled = true;        // when a GitHub App is configured
    int64_t interval_s = 300;   // how often every replica looks, besides right after a 503
    int64_t max_age_s = 21600;  // deliveries older than this are left alone
    int max_per_pass = 50;      // redelivery requests per pass, at most
    int max_attempts = 3;       // requests per delivery, at most
  } redelivery;

  std::string listen_host() const;
  int listen_port() const;
};

// Relative paths (store, allowlist, key file) are resolved against the config file's folder.
// Errors name file:line:column and the key.
RelayConfig load_relay_config(const std::string& path);

}  // namespace ootci
