#include "relay/relay_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "base/error.h"
#include "base/metrics.h"
#include "base/time.h"
#include "net/listen_backlog.h"
#include "relay/allowlist.h"
#include "relay/callback_handler.h"
#include "relay/callback_token.h"
#include "relay/ci_providers.h"
#include "relay/nightly_freshness.h"
#include "relay/outbox_sender.h"
#include "relay/redelivery.h"
#include "relay/sha_validator.h"
#include "relay/sweeper.h"
#include "relay/task_runner.h"
#include "relay/transport.h"
#include "relay/webhook_handler.h"
#include "relay_store/store.h"
#include "sql/sql_db.h"

namespace ootci {
namespace {

std::string require_env(const RelayConfig& c, const std::string& key, const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v || !*v)
    throw Error(fmt::format("{}: {}: environment variable {} is not set", c.path, key, name));
  return v;
}

// The store could not commit: the request is not acknowledged (each write is one transaction,
// so nothing of it is half kept) and the sender should retry; the relay recovers by itself when
// the store does. "Not acknowledged" rather than "not recorded": when PostgreSQL drops the
// connection during the commit the outcome is unknown, and the retry is deduplicated either way.
Reply store_unavailable_reply() {
  Reply r = detail_reply(
      503, "Store unavailable; the request was not acknowledged, retry it later (a retry is safe)");
  r.headers.push_back({"Retry-After", "5"});
  return r;
}

}  // namespace

struct RelayServer::Impl {
  RelayConfig config;
  std::string secret;
  std::unique_ptr<Store> store;
  AllowlistSource allowlist;
  Metrics metrics{{"ootci_webhook_to_dispatch_seconds"}};
  std::shared_ptr<GitHubApp> app;
  TransportRouter router;
  CallbackTokens tokens;
  OutboxSender outbox_sender;
  TaskRunner tasks;
  WebhookHandler webhook;
  OidcVerifier oidc;
  CiProviders ci_providers;
  ShaValidator sha_validator;
  CallbackHandler callback;
  Sweeper sweeper;
  Redeliverer redeliverer;
  httplib::Server http;

  explicit Impl(RelayConfig c)
      : config(std::move(c)),
        secret(require_env(config, "webhook_secret_env", config.webhook_secret_env)),
        store(open_store(config.store)),
        allowlist(config.allowlist, config.allowlist_ttl_s, config.github.api_url),
        app(make_github_app(config)),
        router(config, app),
        tokens(config.callback_token_secret_env.empty()
                   ? CallbackTokens::derive_key(secret)
                   : require_env(config, "callback_token_secret_env",
                                 config.callback_token_secret_env),
               config.callback_token_ttl_s),
        outbox_sender(store->outbox, router, config.dispatch, metrics),
        tasks(store->tasks, app, config, metrics),
        webhook(config, secret, *store, allowlist, outbox_sender, metrics, tokens, tasks),
        oidc(config.oidc_issuers, config.oidc_leeway_s),
        ci_providers(config.ci_providers.empty() ? CiProviders{}
                                                 : CiProviders::load(config.ci_providers)),
        sha_validator(app, config.upstream_repo),
        callback(
            {config, *store, allowlist, oidc, ci_providers, tokens, sha_validator, tasks, metrics}),
        sweeper(*store, config, tasks, metrics),
        redeliverer(*store, app, config, metrics) {
    sweeper.set_level_lifecycle(&allowlist, app);
  }

  std::vector<RouteHook> hooks;

  // A webhook's reply; a store that does not answer gets a 503, and the delivery is noted for
  // redelivery, since GitHub will not send it again by itself.
  Reply webhook_reply(const httplib::Request& req) {
    WebhookRequest w{req.get_header_value("X-GitHub-Event"),
                     req.get_header_value("X-GitHub-Delivery"),
                     req.get_header_value("X-Hub-Signature-256"), req.body};
    try {
      return webhook.handle(w);
    } catch (const SqlUnavailable& e) {
      spdlog::error("webhook {}: {}", w.delivery, e.what());
      redeliverer.note_refused();
      return store_unavailable_reply();
    } catch (const std::exception& e) {
      spdlog::error("webhook {}: {}", w.delivery, e.what());
      return detail_reply(500, "Internal server error");
    }
  }

  Reply callback_reply(const httplib::Request& req) {
    try {
      return callback.handle({req.get_header_value("Authorization"), req.body});
    } catch (const SqlUnavailable& e) {
      spdlog::error("callback: {}", e.what());
      return store_unavailable_reply();
    } catch (const std::exception& e) {
      spdlog::error("callback: {}", e.what());
      return detail_reply(500, "Internal server error");
    }
  }

  nlohmann::json health() {
    OutboxCounts c = store->outbox.outbox_counts();
    TaskCounts t = store->tasks.task_counts();
    int64_t age = sweeper_age_s();
    // A sweeper that missed three passes is stuck: say so, so an orchestrator can act.
    int64_t grace_s = 3 * config.sweeper.interval_s + 30;
    bool sweeper_ok = age >= 0 && age <= grace_s;
    // In-progress jobs past their deadline: the sweeper times them out within a pass, so a job
    // overdue by more than the same grace means it does not (CRCR's blind spot, #8800).
    int64_t deadline = now_ms() - config.sweeper.zombie_timeout_s * 1000;
    int64_t overdue = store->jobs.count_overdue_jobs(deadline);
    int64_t stuck = overdue ? store->jobs.count_overdue_jobs(deadline - grace_s * 1000) : 0;
    return {{"ok", sweeper_ok && stuck == 0}, {"outbox_pending", c.pending},
            {"outbox_failed", c.failed},      {"tasks_pending", t.pending},
            {"tasks_failed", t.failed},       {"sweeper_last_run_age_s", age},
            {"sweeper_ok", sweeper_ok},       {"jobs_overdue", overdue},
            {"jobs_overdue_unswept", stuck}};
  }

  // The Prometheus text of /metrics: the latency histograms and the store's gauges. A store that
  // does not answer leaves the gauges at zero rather than failing the scrape.
  std::string metrics_text() {
    OutboxCounts c{};
    TaskCounts t{};
    double heartbeat = 0, overdue = 0;
    std::vector<std::pair<std::string, double>> nightly, stale;
    try {
      c = store->outbox.outbox_counts();
      t = store->tasks.task_counts();
      if (auto v = store->shared.get_meta(Sweeper::kHeartbeatKey))
        heartbeat = std::stoll(*v) / 1000.0;
      overdue =
          double(store->jobs.count_overdue_jobs(now_ms() - config.sweeper.zombie_timeout_s * 1000));
      for (const auto& f : nightly_freshness(store->jobs, *allowlist.get(), now_ms(),
                                             config.nightly.stale_after_h)) {
        std::string label = fmt::format("{{repo=\"{}\"}}", f.repo);
        if (f.last_ms >= 0)
          nightly.push_back({"ootci_nightly_last_timestamp_seconds" + label, f.last_ms / 1000.0});
        stale.push_back({"ootci_nightly_stale" + label, f.stale ? 1.0 : 0.0});
      }
    } catch (const std::exception&) {
    }
    std::vector<std::pair<std::string, double>> gauges = {
        {"ootci_outbox_depth", double(c.pending)},
        {"ootci_outbox_failed", double(c.failed)},
        {"ootci_outbox_delivered", double(c.delivered)},
        {"ootci_tasks_pending", double(t.pending)},
        {"ootci_tasks_failed", double(t.failed)},
        {"ootci_sweeper_last_run_timestamp_seconds", heartbeat},
        {"ootci_jobs_overdue", overdue}};
    gauges.insert(gauges.end(), nightly.begin(), nightly.end());
    gauges.insert(gauges.end(), stale.begin(), stale.end());
    return metrics.render(gauges);
  }

  // Seconds since the sweeper last finished a pass (any replica), or -1 if it never has.
  int64_t sweeper_age_s() {
    auto v = store->shared.get_meta(Sweeper::kHeartbeatKey);
    return v ? (now_ms() - std::stoll(*v)) / 1000 : -1;
  }
};

RelayServer::RelayServer(RelayConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
RelayServer::~RelayServer() {
  stop();
}

void RelayServer::stop() {
  if (!impl_) return;
  impl_->http.stop();
  impl_->outbox_sender.stop();
  impl_->sweeper.stop();
  impl_->redeliverer.stop();
  impl_->tasks.stop();
}

void RelayServer::add_routes(RouteHook hook) {
  impl_->hooks.push_back(std::move(hook));
}

void RelayServer::run() {
  Impl& s = *impl_;
  // Level tenure for the HUD's L3 readiness: recorded whenever the allowlist (re)loads.
  s.allowlist.set_on_load([&s](const Allowlist& a) {
    for (const auto& e : a.entries())
      s.store->levels.record_level(e.repo, to_string(e.level), now_ms());
  });
  s.allowlist.get();  // fail fast on a broken allowlist
  // With SQLite this process is the only user of the file, so rows leased by a killed
  // predecessor can be retried at once instead of after their lease.
  if (s.config.store.rfind("sqlite:", 0) == 0) s.store->outbox.release_leases(now_ms());

  auto& http = s.http;
  int threads = s.config.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(25 * 1024 * 1024);  // GitHub's webhook size cap
  // A callback over its cap is still read before the 413: answering early would reset the
  // connection under a client that is still sending, and it would see no status at all.
  // Small JSON answers: without TCP_NODELAY, Nagle and delayed ACKs add ~40 ms per round trip.
  http.set_tcp_nodelay(true);
  http.Post("/github/webhook", [&s](const httplib::Request& req, httplib::Response& res) {
    send_reply(res, s.webhook_reply(req));
  });
  http.Post("/github/callback", [&s](const httplib::Request& req, httplib::Response& res) {
    send_reply(res, s.callback_reply(req));
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    send_reply(res, detail_reply(405, "Method not allowed"));
  };
  for (const char* path : {"/github/webhook", "/github/callback"}) {
    http.Get(path, not_allowed);
    http.Put(path, not_allowed);
    http.Delete(path, not_allowed);
    http.Patch(path, not_allowed);
  }
  http.Get("/healthz", [&s](const httplib::Request&, httplib::Response& res) {
    try {
      nlohmann::json h = s.health();
      send_reply(res, json_reply(h["ok"] == true ? 200 : 503, h));
    } catch (const std::exception& e) {
      send_reply(res, json_reply(503, {{"ok", false}, {"detail", e.what()}}));
    }
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics_text(), "text/plain; version=0.0.4");
  });
  for (auto& hook : s.hooks) hook(http, *s.store, s.allowlist, [&s] { return s.health(); });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) send_reply(res, detail_reply(404, "Not found"));
  });

  if (!http.bind_to_port(s.config.listen_host(), s.config.listen_port()))
    throw Error(fmt::format("{}: listen: cannot bind {}", s.config.path, s.config.listen));
  if (!raise_listen_backlog(s.config.listen_port()))
    spdlog::warn("could not raise the listen backlog; bursts may see 1 s connect delays");
  if (!s.config.dispatch.synchronous) s.outbox_sender.start();
  s.tasks.start(s.config.dispatch.workers);  // the same GitHub API, the same latency
  s.sweeper.start();
  s.redeliverer.start();
  spdlog::info("relay listening on {} (store {}, upstream {})", s.config.listen,
               s.config.store.rfind("sqlite:", 0) == 0 ? s.config.store : "postgresql",
               s.config.upstream_repo);
  http.listen_after_bind();
}

}  // namespace ootci
