// Sustained callback throughput and latency of the relay process on loopback, on SQLite and on
// PostgreSQL, against a baseline handler that authenticates and validates but skips storage
// (callback.dry_run) in the same run. Prints each and the ratios.
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

#include "base/time.h"
#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"
#include "testing/percentile.h"
#include "testing/relay_config.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::callback_throughput {

struct Result {
  std::string name;
  int ok = 0;
  int errors = 0;
  double seconds = 0;
  std::vector<double> ms;
};

Result run(const std::string& name, const std::string& store_kind, bool dry_run, int deliveries,
           int jobs, int senders) {
  std::string dir = make_temp_dir();
  auto standin = start_github_standin(dir, 7);
  OidcIssuerStandin oidc;
  oidc.start();
  write_file(dir + "/allowlist.yml", "L2:\n  - bench/backend\n");
  int port = free_port();
  RelayYaml y = wired_relay(port, fresh_store_uri(store_kind), *standin, &oidc);
  y.secret_env = "BENCH_SECRET";
  y.http_threads = 16;
  y.extra = fmt::format("callback: {{rate_limit_per_min: 1000000, dry_run: {}}}\n", dry_run);
  std::string cfg = relay_yaml(y);
  RelayProcess relay(dir, cfg, port, {{"BENCH_SECRET", "s3cret"}});
  relay.start();
  std::string webhook = read_file(fixture_path("github-webhooks/pull_request.opened.json"));
  for (int d = 0; d < deliveries; ++d)
    send_webhook(relay.url(), "pull_request", fmt::format("cb-{}", d), webhook, "s3cret");
  standin->wait_for_dispatches(deliveries, 60000);
  auto payload = nlohmann::json::parse(webhook);
  std::string token = oidc.mint(oidc.claims_for("bench/backend"));

  // Every job sends in_progress then completed, as a real job does: 2 x deliveries x jobs.
  std::vector<std::string> bodies;
  for (int d = 0; d < deliveries; ++d)
    for (int j = 0; j < jobs; ++j)
      for (const char* status : {"in_progress", "completed"}) {
        nlohmann::json b = {{"event_type", "pull_request"},
                            {"delivery_id", fmt::format("cb-{}", d)},
                            {"payload", payload},
                            {"workflow",
                             {{"schema_version", "1"},
                              {"status", status},
                              {"name", "CI"},
                              {"run_id", std::to_string(1000 + d)},
                              {"run_attempt", "1"},
                              {"job_name", fmt::format("job-{}", j)},
                              {"conclusion", std::string(status) == "completed" ? "success" : ""},
                              {"test_results", {{"passed", 100}, {"failed", 0}, {"skipped", 3}}}}}};
        bodies.push_back(b.dump());
      }
  // Sender s owns jobs s, s+senders, ...: each job's two callbacks stay in order.
  Result r;
  r.name = name;
  std::vector<std::vector<double>> lat(senders);
  std::atomic<int> ok{0}, errors{0};
  int64_t t0 = steady_us();
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s)
    threads.emplace_back([&, s] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      httplib::Headers h = {{"Authorization", "Bearer " + token}};
      for (size_t i = 2 * s; i < bodies.size(); i += 2 * senders)
        for (size_t k = i; k < i + 2; ++k) {
          int64_t start = steady_us();
          auto res = client.Post("/github/callback", h, bodies[k], "application/json");
          lat[s].push_back((steady_us() - start) / 1000.0);
          (res && res->status == 200 ? ok : errors)++;
        }
    });
  for (auto& t : threads) t.join();
  r.seconds = (steady_us() - t0) / 1e6;
  r.ok = ok;
  r.errors = errors;
  for (auto& v : lat) r.ms.insert(r.ms.end(), v.begin(), v.end());
  relay.stop();
  return r;
}

int main(int argc, char** argv) {
  CLI::App app{"relay callback benchmark"};
  int deliveries = 50, jobs = 40, senders = 4;
  bool postgres = std::getenv("OOTCI_TEST_PG_URI") != nullptr;
  app.add_option("--deliveries", deliveries);
  app.add_option("--jobs", jobs, "jobs per delivery (each sends in_progress and completed)");
  app.add_option("--senders", senders);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::vector<Result> results;
  results.push_back(run("baseline (no storage)", "sqlite", true, deliveries, jobs, senders));
  results.push_back(run("sqlite", "sqlite", false, deliveries, jobs, senders));
  if (postgres)
    results.push_back(run("postgresql", "postgres", false, deliveries, jobs, senders));
  else
    std::cout << "(set OOTCI_TEST_PG_URI to include PostgreSQL)\n";
  std::cout << fmt::format("{} callbacks per run, {} concurrent senders with keep-alive\n",
                           2 * deliveries * jobs, senders);
  std::cout << fmt::format("{:<24} {:>8} {:>7} {:>12} {:>9} {:>9} {:>10}\n", "handler", "ok",
                           "errors", "callbacks/s", "p50 ms", "p99 ms", "vs base");
  double base = results[0].ok / results[0].seconds;
  bool all_ok = true;
  for (const auto& r : results) {
    double rate = r.ok / r.seconds;
    std::cout << fmt::format("{:<24} {:>8} {:>7} {:>12.0f} {:>9.2f} {:>9.2f} {:>9.2f}x\n", r.name,
                             r.ok, r.errors, rate, percentile(r.ms, 0.5), percentile(r.ms, 0.99),
                             rate / base);
    all_ok = all_ok && r.errors == 0;
  }
  return all_ok ? 0 : 1;
}

}  // namespace ootci::bench::callback_throughput
