#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "base/error.h"
#include "base/time.h"
#include "base/yaml_doc.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "hud/hud_routes.h"
#include "hud_seed/seed.h"
#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay/level_sync.h"
#include "relay/relay_server.h"
#include "relay/transport.h"
#include "relay_store/store.h"

namespace ootci {
namespace {

void serve_relay(const std::string& config_path) {
  RelayConfig config = load_relay_config(config_path);
  HudSettings hud{config.hud.l4_criteria, config.hud.levels, config.nightly.stale_after_h};
  RelayServer server(std::move(config));
  server.add_routes([hud](httplib::Server& http, Store& store, AllowlistSource& allowlist,
                          std::function<nlohmann::json()> relay_health) {
    register_hud_routes(http, store, allowlist, std::move(relay_health), hud);
  });
  // SIGTERM/SIGINT stop the listener and let in-flight dispatch attempts finish; rows not yet
  // delivered stay in the outbox for the next start.
  serve_until_stop_signal([&] { server.run(); }, [&] { server.stop(); });
}

void allowlist_check(const std::string& path) {
  Allowlist a = Allowlist::parse(load_yaml_file(path));
  for (const std::string& w : a.warnings()) std::cerr << "warning: " << w << "\n";
  for (const auto& e : a.entries()) {
    std::string extra;
    if (!e.device.empty()) extra += " device=" + e.device;
    if (!e.oncalls.empty()) {
      extra += " oncalls=";
      for (size_t i = 0; i < e.oncalls.size(); ++i) extra += (i ? "," : "") + e.oncalls[i];
    }
    if (!e.events.empty()) {
      extra += " events=";
      for (size_t i = 0; i < e.events.size(); ++i) extra += (i ? "," : "") + e.events[i];
    }
    std::cout << fmt::format("{} {}{}\n", e.repo, to_string(e.level), extra);
  }
  std::cout << fmt::format("{}: ok, {} repos\n", path, a.entries().size());
}

// One pass of the demotion PRs, through the relay's App and from the relay's store.
void sync_levels_once(const std::string& config_path, bool dry_run) {
  RelayConfig config = load_relay_config(config_path);
  auto app = make_github_app(config);
  if (!app)
    throw Error(config.path +
                ": github: sync-levels needs the GitHub App (app_id and "
                "private_key_file)");
  auto store = open_store(config.store);
  SyncReport r = sync_levels(*app, *store, config, now_ms(), dry_run);
  for (const auto& d : r.done) std::cout << d << "\n";
  for (const auto& f : r.failed) std::cerr << "sync-levels: " << f << "\n";
  if (r.done.empty() && r.failed.empty()) std::cout << "nothing to do\n";
  if (!r.ok()) throw ExitStatus{1};
}

void seed(const std::string& store_uri, const SeedOptions& options,
          const std::string& allowlist_out) {
  auto store = open_store(store_uri);
  SeedOptions o = options;
  o.now_ms = now_ms();
  SeedResult r = seed_store(*store, o);
  if (!allowlist_out.empty()) {
    std::ofstream out(allowlist_out);
    out << "# Written by `ootci relay seed`: the seeded backends and their levels.\n"
        << r.allowlist_yaml;
    if (!out) throw Error(allowlist_out + ": cannot write");
  }
  std::cout << fmt::format("seeded {} jobs for {} backends over {} days (busiest PR #{})\n", r.jobs,
                           o.backends, o.days, r.busiest_pr);
}

}  // namespace

void add_relay_commands(CLI::App& app) {
  auto* relay = app.add_subcommand("relay", "The upstream relay (CRCR-compatible)");
  relay->require_subcommand(1);

  auto* serve_cmd = relay->add_subcommand("serve", "Serve webhooks and dispatch to downstreams");
  static std::string config_path;
  serve_cmd->add_option("--config", config_path, "relay.yaml")->required();
  serve_cmd->callback([] {
    block_stop_signals();
    serve_relay(config_path);
  });

  auto* sync_cmd = relay->add_subcommand(
      "sync-levels", "Open, refresh and close demotion PRs on the upstream repo (once)");
  static std::string sync_config;
  static bool sync_dry_run = false;
  sync_cmd->add_option("--config", sync_config, "relay.yaml")->required();
  sync_cmd->add_flag("--dry-run", sync_dry_run, "print what would be done, change nothing");
  sync_cmd->callback([] { sync_levels_once(sync_config, sync_dry_run); });

  auto* seed_cmd = relay->add_subcommand(
      "seed",
      "Fill a store with made-up CRCR history, to try the HUD (demo and benchmark data; never "
      "point it at a production store)");
  static std::string seed_store_uri, seed_allowlist_out;
  static SeedOptions seed_options;
  seed_cmd->add_option("--store", seed_store_uri, "sqlite:PATH or postgresql:// URI")->required();
  seed_cmd->add_option("--backends", seed_options.backends)->check(CLI::Range(1, 50));
  seed_cmd->add_option("--deliveries", seed_options.deliveries)->check(CLI::Range(0, 10000000));
  seed_cmd->add_option("--days", seed_options.days)->check(CLI::Range(1, 365));
  seed_cmd->add_option("--seed", seed_options.seed, "random seed (the same seed, the same data)");
  seed_cmd->add_flag("--xss-probe", seed_options.xss_probe,
                     "add a job named <script>alert(1)</script>");
  seed_cmd->add_flag("--pending-demotion", seed_options.pending_demotion,
                     "record an open demotion PR for the L3 backend (the HUD's banner)");
  seed_cmd->add_option("--allowlist-out", seed_allowlist_out,
                       "write the seeded backends' allowlist here");
  seed_cmd->callback([] { seed(seed_store_uri, seed_options, seed_allowlist_out); });

  auto* allow = relay->add_subcommand("allowlist", "Allowlist tools");
  allow->require_subcommand(1);
  auto* check = allow->add_subcommand("check", "Validate a CRCR allowlist and print repo → level");
  static std::string allow_path;
  check->add_option("FILE", allow_path, "allowlist.yml")->required();
  check->callback([] { allowlist_check(allow_path); });
}

}  // namespace ootci
