// The relay killed with SIGKILL again and again under a stream of signed webhooks and OIDC
// callbacks, against targets that answer like GitHub on a real day (latency, 5xx, timeouts that
// were carried out). Counts, per store configuration, what was accepted, owed, delivered, lost and
// duplicated. Lost must be 0; duplicates are what at-least-once costs, and are explained.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "relay_store/store.h"
#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"
#include "testing/relay_config.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::relay_chaos {

constexpr const char* kSecret = "s3cret";
// Two L2 targets (dispatches and callbacks) and two L4 targets (check runs too).
const std::vector<std::string> kTargets = {"bench/l2a", "bench/l2b", "bench/l4a", "bench/l4b"};

struct Options {
  int trials = 100;
  int rate = 20;  // webhooks per second
  int latency_ms = 300;
  double error_rate = 0.05;
  double timeout_rate = 0.01;
  int min_gap_ms = 200, max_gap_ms = 1200;  // between kills
  uint64_t seed = 1;
};

struct Tally {
  int64_t kills = 0, webhooks_accepted = 0, webhook_refusals = 0;
  int64_t owed = 0, delivered = 0, lost = 0, sent = 0, late = 0;
  int64_t callbacks_accepted = 0, callbacks_lost = 0, callback_refusals = 0;
  int64_t checks_owed = 0, checks_created = 0, check_posts = 0;
  int64_t relay_redeliveries = 0;  // POST /app/hook/deliveries/{id}/attempts
  double seconds = 0;
};

// One downstream job: its dispatch, and how far its callbacks were accepted.
struct Job {
  nlohmann::json cp;
  std::string repo;
  int64_t run_id = 0;
  int accepted = 0;  // 0 none, 1 in_progress, 2 completed
};

nlohmann::json callback_body(const Job& j, bool done) {
  nlohmann::json w = {
      {"schema_version", "1"},
      {"status", done ? "completed" : "in_progress"},
      {"conclusion", done ? nlohmann::json("success") : nlohmann::json(nullptr)},
      {"name", "CI"},
      {"url", fmt::format("https://github.com/{}/actions/runs/{}", j.repo, j.run_id)},
      {"run_id", std::to_string(j.run_id)},
      {"run_attempt", "1"},
      {"job_name", "test"},
      {"started_at", "2026-12-03T10:00:00Z"},
      {"completed_at", done ? nlohmann::json("2026-12-03T10:20:00Z") : nlohmann::json(nullptr)},
      {"test_results", done ? nlohmann::json({{"passed", 10}, {"failed", 0}, {"skipped", 2}})
                            : nlohmann::json(nullptr)}};
  return {{"event_type", j.cp["event_type"]},
          {"delivery_id", j.cp["delivery_id"]},
          {"payload", j.cp["payload"]},
          {"callback_token", j.cp["callback_token"]},
          {"workflow", w}};
}

// PostgreSQL in immediate mode, as a crash: scripts/lib/pg.sh restarts the server that
// scripts/test (or the caller) started, whose data directory is OOTCI_TEST_PG_DIR.
void restart_postgres() {
  const char* dir = std::getenv("OOTCI_TEST_PG_DIR");
  if (!dir || !*dir)
    throw Error("pg-restart needs OOTCI_TEST_PG_DIR (pg_start in scripts/lib/pg.sh)");
  SpawnOptions s;
  s.argv = {"bash", "-c", "source \"$0/scripts/lib/pg.sh\" && pg_restart \"$1\"", source_dir(),
            dir};
  CapturedRun r = run_captured(s, 60000);
  if (!r.ok()) throw Error("pg_restart failed: " + r.err);
}

Tally run(const std::string& mode, const Options& o) {
  std::string dir = make_temp_dir();
  auto standin_owner = start_github_standin(dir, 7);
  GitHubStandin& standin = *standin_owner;
  standin.set_profile({o.latency_ms, o.error_rate, o.timeout_rate, 1500, o.seed});
  OidcIssuerStandin oidc;
  oidc.start();
  std::string store = fresh_store_uri(mode == "sqlite" ? "sqlite" : "postgres");
  int n_relays = mode == "postgres3" ? 3 : 1;
  std::vector<std::unique_ptr<RelayProcess>> relays;
  for (int i = 0; i < n_relays; ++i) {
    std::string d = fmt::format("{}/relay{}", dir, i);
    std::filesystem::create_directories(d);
    std::filesystem::copy_file(dir + "/app.pem", d + "/app.pem");
    write_file(
        d + "/allowlist.yml",
        "L2:\n  - bench/l2a\n  - bench/l2b\nL4:\n  - bench/l4a: '@a'\n  - bench/l4b: '@b'\n");
    int port = free_port();
    RelayYaml y = wired_relay(port, store, standin, &oidc);
    y.secret_env = "BENCH_SECRET";
    y.http_threads = 16;
    // request_timeout_ms under the targets' 1.5 s "timeouts": those are carried out but the
    // relay cannot know, so it sends again (a duplicate, as with GitHub).
    y.dispatch =
        "  workers: 16\n  request_timeout_ms: 1000\n  initial_backoff_ms: 200\n"
        "  max_backoff_ms: 2000\n  max_attempts: 30\n";
    y.extra = "callback: {rate_limit_per_min: 1000000}\n";
    // PostgreSQL restarts: webhooks go through the App's deliveries, as GitHub sends them, and
    // the relay itself asks for the ones it refused (no manual redelivery).
    if (mode == "pg-restart")
      y.extra += "redelivery: {interval_s: 1, max_per_pass: 200, max_attempts: 50}\n";
    std::string cfg = relay_yaml(y);
    relays.push_back(std::make_unique<RelayProcess>(
        d, cfg, port, std::map<std::string, std::string>{{"BENCH_SECRET", kSecret}}));
    relays.back()->start();
  }
  if (mode == "pg-restart") standin.set_app_webhook(relays[0]->url() + "/github/webhook", kSecret);
  std::mutex relay_mu;  // held while a relay restarts, so senders pick a URL that exists
  std::atomic<uint64_t> rr{0};
  auto url_of = [&]() {
    std::lock_guard lock(relay_mu);
    return relays[rr++ % relays.size()]->url();
  };

  Tally t;
  std::string body = read_file(fixture_path("github-webhooks/pull_request.opened.json"));
  std::atomic<bool> sending{true}, draining{false};
  std::mutex mu;
  std::set<std::string> accepted;  // delivery ids answered 200
  std::atomic<int64_t> webhook_refusals{0}, callback_refusals{0};
  int64_t t0 = steady_us();

  // GitHub's side: a steady stream. With the relay killed, a delivery not answered 200 is
  // redelivered until it is (by hand, as an operator would); with PostgreSQL restarted it is sent
  // once through the App's deliveries, and the relay asks GitHub for the ones it refused.
  std::thread webhooks([&] {
    for (int i = 0; sending; ++i) {
      int64_t due = t0 + int64_t{i} * 1000000 / o.rate;
      while (steady_us() < due) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::string id = fmt::format("chaos-{}", i);
      if (mode == "pg-restart") {
        if (standin.deliver_webhook("pull_request", id, body) != 200) webhook_refusals++;
        std::lock_guard lock(mu);
        accepted.insert(id);  // owed whatever the answer: the relay must get it redelivered
        continue;
      }
      for (;;) {
        HttpResult r = send_webhook(url_of(), "pull_request", id, body, kSecret);
        if (r.status == 200) break;
        webhook_refusals++;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::lock_guard lock(mu);
      accepted.insert(id);
    }
  });

  // The downstream CI: every dispatch that arrives runs a job that reports in_progress, then
  // completed, each retried until the relay answers 200 (as the callback action's retries do).
  // The watcher turns new dispatches into jobs; it ends once draining and every job has run.
  std::map<std::string, Job> jobs;  // delivery:repo, one per distinct dispatch
  std::atomic<int64_t> next_run{1000};
  std::vector<std::thread> callers;
  size_t seen = 0;    // dispatches looked at, duplicates included
  int in_flight = 0;  // jobs a caller is reporting
  bool watcher_done = false;
  std::mutex jobs_mu;
  std::vector<std::string> queue;
  std::thread watcher([&] {
    for (;;) {
      bool last = draining.load();
      auto got = standin.dispatches(seen);
      std::lock_guard lock(jobs_mu);
      seen += got.size();
      for (const auto& d : got) {
        t.late += d.answered_late;
        std::string k = d.client_payload["delivery_id"].get<std::string>() + ":" + d.repo;
        if (jobs.count(k)) continue;  // a duplicate dispatch: the job already runs
        jobs[k] = {d.client_payload, d.repo, next_run++, 0};
        queue.push_back(k);
      }
      if (last && queue.empty() && in_flight == 0) {
        watcher_done = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&] {
      for (;;) {
        std::string k;
        Job j;
        {
          std::lock_guard lock(jobs_mu);
          if (queue.empty() && watcher_done) return;
          if (!queue.empty()) {
            k = queue.back();
            queue.pop_back();
            j = jobs[k];
            in_flight++;
          }
        }
        if (k.empty()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
        for (int step = 1; step <= 2; ++step) {
          for (;;) {
            HttpRequest req;
            req.method = "POST";
            req.url = url_of() + "/github/callback";
            req.body = callback_body(j, step == 2).dump();
            req.headers = {{"Authorization", "Bearer " + oidc.mint(oidc.claims_for(j.repo))}};
            req.timeout_ms = 5000;
            HttpResult r = http_send(req);
            if (r.status == 200) break;
            callback_refusals++;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          std::lock_guard lock(jobs_mu);
          jobs[k].accepted = step;
        }
        std::lock_guard lock(jobs_mu);
        in_flight--;
      }
    });

  // The chaos: kill a relay (or restart PostgreSQL) at a random moment, start it again, repeat.
  std::mt19937_64 rng(o.seed);
  for (int trial = 0; trial < o.trials; ++trial) {
    int gap = o.min_gap_ms + static_cast<int>(rng() % (o.max_gap_ms - o.min_gap_ms + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(gap));
    if (mode == "pg-restart") {
      restart_postgres();
    } else {
      RelayProcess& victim = *relays[rng() % relays.size()];
      std::lock_guard lock(relay_mu);
      victim.kill_hard();
      victim.start();
    }
    t.kills++;
  }
  sending = false;
  webhooks.join();

  // Drain: every dispatch owed arrives (as a job) and every job reports, or the drain times out.
  size_t owed;
  {
    std::lock_guard lock(mu);
    owed = accepted.size() * kTargets.size();
  }
  for (int i = 0; i < 1800; ++i) {
    {
      std::lock_guard lock(jobs_mu);
      if (jobs.size() >= owed) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  draining = true;
  watcher.join();
  for (auto& c : callers) c.join();
  t.seconds = (steady_us() - t0) / 1e6;

  // Count, from what the targets received and what the store holds.
  t.webhooks_accepted = static_cast<int64_t>(accepted.size());
  t.webhook_refusals = webhook_refusals;
  t.owed = static_cast<int64_t>(owed);
  for (const auto& id : accepted)
    for (const auto& repo : kTargets) jobs.count(id + ":" + repo) ? t.delivered++ : t.lost++;
  t.sent = static_cast<int64_t>(seen + standin.dispatches(seen).size());
  t.callback_refusals = callback_refusals;
  auto check_store = open_store(store);
  std::set<std::string> l4_jobs;
  for (const auto& [k, j] : jobs) {
    t.callbacks_accepted += j.accepted;
    std::string job_key =
        fmt::format("{}:{}:{}:1:test", j.cp["delivery_id"].get<std::string>(), j.repo, j.run_id);
    auto stored = check_store->jobs.get_job(job_key);
    int kept = !stored ? 0 : stored->status == JobStatus::kCompleted ? 2 : 1;
    if (kept < j.accepted) t.callbacks_lost += j.accepted - kept;
    if (j.repo.find("/l4") != std::string::npos && j.accepted == 2) {
      t.checks_owed += 2;  // in_progress and completed
      l4_jobs.insert(std::to_string(j.run_id));
    }
  }
  // A job's check run is created once in_progress and once completed (external_id run:attempt).
  for (int i = 0; i < 600; ++i) {
    std::set<std::string> made;
    auto calls = standin.calls("/repos/Codertocat/Hello-World/check-runs");
    for (const auto& c : calls) {
      std::string ext = c.body.value("external_id", "");
      if (l4_jobs.count(ext.substr(0, ext.find(':'))))
        made.insert(ext + "/" + c.body.value("status", ""));
    }
    t.checks_created = static_cast<int64_t>(made.size());
    t.check_posts = static_cast<int64_t>(calls.size());
    if (t.checks_created >= t.checks_owed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  t.relay_redeliveries = standin.redelivery_requests();
  for (auto& r : relays) r->stop();
  standin.stop();
  return t;
}

int main(int argc, char** argv) {
  CLI::App app{"relay chaos: SIGKILL under load, lost and duplicated work counted"};
  Options o;
  std::vector<std::string> modes = {"sqlite", "postgres", "postgres3", "pg-restart"};
  app.add_option("--trials", o.trials, "kills per store configuration");
  app.add_option("--store", modes,
                 "sqlite, postgres, postgres3 (three relays), pg-restart (PostgreSQL restarted "
                 "instead of a relay killed; OOTCI_TEST_PG_DIR); postgres ones need "
                 "OOTCI_TEST_PG_URI");
  app.add_option("--rate", o.rate, "webhooks per second");
  app.add_option("--latency-ms", o.latency_ms, "targets' mean answer time");
  app.add_option("--error-rate", o.error_rate, "share of target requests answered 5xx");
  app.add_option("--timeout-rate", o.timeout_rate,
                 "share carried out but answered after the relay's timeout");
  app.add_option("--seed", o.seed);
  CLI11_PARSE(app, argc, argv);
  auto env_set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  std::vector<std::string> runnable;
  for (const auto& m : modes) {
    if (m != "sqlite" && !env_set("OOTCI_TEST_PG_URI"))
      std::cout << m << ": skipped, set OOTCI_TEST_PG_URI (scripts/lib/pg.sh pg_start)\n";
    else if (m == "pg-restart" && !env_set("OOTCI_TEST_PG_DIR"))
      std::cout << m << ": skipped, set OOTCI_TEST_PG_DIR (scripts/lib/pg.sh pg_start)\n";
    else
      runnable.push_back(m);
  }
  modes = runnable;
  std::cout << fmt::format(
      "relay chaos: {} crashes per store, {} webhooks/s x {} targets, targets {} ms, {:.0f}% 5xx, "
      "{:.0f}% late\n",
      o.trials, o.rate, kTargets.size(), o.latency_ms, o.error_rate * 100, o.timeout_rate * 100);
  std::vector<std::pair<std::string, Tally>> rows;
  for (const auto& m : modes) {
    rows.push_back({m, run(m, o)});
    std::cout << fmt::format("{}: done in {:.0f} s\n", m, rows.back().second.seconds) << std::flush;
  }
  auto line = [&](const char* what, auto get) {
    std::cout << fmt::format("{:<44}", what);
    for (const auto& [m, t] : rows) std::cout << fmt::format(" {:>11}", get(t));
    std::cout << "\n";
  };
  std::cout << fmt::format("{:<44}", "");
  for (const auto& [m, t] : rows) std::cout << fmt::format(" {:>11}", m);
  std::cout << "\n";
  line("crashes (relay SIGKILL, or PostgreSQL restart)", [](const Tally& t) { return t.kills; });
  line("webhooks accepted (200), or sent (pg-restart)",
       [](const Tally& t) { return t.webhooks_accepted; });
  line("  refused or unanswered, redelivered", [](const Tally& t) { return t.webhook_refusals; });
  line("    redeliveries the relay asked GitHub for",
       [](const Tally& t) { return t.relay_redeliveries; });
  line("dispatches owed", [](const Tally& t) { return t.owed; });
  line("dispatches delivered", [](const Tally& t) { return t.delivered; });
  line("dispatches LOST", [](const Tally& t) { return t.lost; });
  line("dispatch requests carried out", [](const Tally& t) { return t.sent; });
  line("  duplicates (at least once)", [](const Tally& t) { return t.sent - t.delivered; });
  // A carried-out request answered past the relay's timeout is sent once more; the rest were in
  // flight when their relay died (or whose outcome the store could not record), sent again once
  // their lease ran out.
  line("    after an answer past the timeout", [](const Tally& t) { return t.late; });
  line("    after a relay or store crash mid-attempt",
       [](const Tally& t) { return t.sent - t.delivered - t.late; });
  line("callbacks accepted (200)", [](const Tally& t) { return t.callbacks_accepted; });
  line("  refused or unanswered, retried", [](const Tally& t) { return t.callback_refusals; });
  line("callbacks LOST", [](const Tally& t) { return t.callbacks_lost; });
  line("check runs owed", [](const Tally& t) { return t.checks_owed; });
  line("check runs created", [](const Tally& t) { return t.checks_created; });
  line("  check-run requests carried out", [](const Tally& t) { return t.check_posts; });
  bool ok = true;
  for (const auto& [m, t] : rows)
    ok = ok && t.lost == 0 && t.callbacks_lost == 0 && t.checks_created >= t.checks_owed;
  std::cout << (ok ? "nothing accepted was lost\n" : "LOST WORK: see the rows above\n");
  return ok ? 0 : 1;
}

}  // namespace ootci::bench::relay_chaos
