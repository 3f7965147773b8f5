// HUD API latency as the history grows: p50 and p95 of each page's API at 10k, 100k and 1M job
// rows, on a seeded store behind the real relay process. The ratio column is each size against
// the smallest, to show how the cost grows.
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "base/time.h"
#include "hud_seed/seed.h"
#include "testing/percentile.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::hud_api_latency {

struct Row {
  std::string api;
  double p50, p95;
};

std::vector<Row> measure(int64_t target_rows, int requests, const std::string& store_kind,
                         int64_t* rows_out) {
  std::string dir = make_temp_dir();
  std::string uri = fresh_store_uri(store_kind);
  auto store = open_store(uri);
  SeedOptions o;
  o.now_ms = now_ms();
  // About 12.2 rows per delivery with 5 backends (4 reporting, 3 jobs, some re-runs).
  o.deliveries = static_cast<int>(target_rows / 12.2);
  SeedResult seeded = seed_store(*store, o);
  *rows_out = seeded.jobs;
  store.reset();
  write_file(dir + "/allowlist.yml", seeded.allowlist_yaml);
  int port = free_port();
  RelayProcess relay(dir,
                     fmt::format("listen: 127.0.0.1:{}\nstore: \"{}\"\nallowlist: allowlist.yml\n"
                                 "webhook_secret_env: S\n",
                                 port, uri),
                     port, {{"S", "x"}});
  relay.start();
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_read_timeout(120, 0);
  // A PR and a job key that exist, from the APIs themselves.
  auto first =
      nlohmann::json::parse(client.Get("/api/crcr/repo/seed-org/backend-2?range=30d")->body);
  std::string key = first["matrix"]["rows"][0]["cells"].begin().value()["key"];
  std::vector<std::pair<std::string, std::string>> apis = {
      {"summary 30d", "/api/crcr/summary?range=30d"},
      {"summary 24h", "/api/crcr/summary?range=24h"},
      {"backend 30d", "/api/crcr/repo/seed-org/backend-2?range=30d"},
      {"backend p.10", "/api/crcr/repo/seed-org/backend-2?range=30d&page=10"},
      {"backend night", "/api/crcr/repo/seed-org/backend-2?range=30d&tab=nightly"},
      {"backend 7d", "/api/crcr/repo/seed-org/backend-2?range=7d"},
      {"metrics 30d", "/api/crcr/metrics?days=30"},
      {"metrics 90d", "/api/crcr/metrics?days=90"},
      {"pr", fmt::format("/api/crcr/pr/{}", seeded.busiest_pr)},
      {"job", "/api/crcr/job?key=" + httplib::detail::encode_query_param(key)},
      {"level-status", "/api/crcr/level-status"},
  };
  std::vector<Row> out;
  for (const auto& [name, path] : apis) {
    std::vector<double> ms;
    for (int i = 0; i < requests; ++i) {
      int64_t t = steady_us();
      auto res = client.Get(path);
      ms.push_back((steady_us() - t) / 1000.0);
      if (!res || res->status != 200)
        std::cerr << name << ": HTTP " << (res ? res->status : 0) << "\n";
    }
    out.push_back({name, percentile(ms, 0.5), percentile(ms, 0.95)});
  }
  relay.stop();
  return out;
}

int main(int argc, char** argv) {
  CLI::App app{"HUD API latency vs history size"};
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  int requests = 20;
  std::string store = "sqlite";
  app.add_option("--rows", sizes, "job-row counts to measure");
  app.add_option("--requests", requests);
  app.add_option("--store", store, "sqlite or postgres (needs OOTCI_TEST_PG_URI)");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::vector<std::vector<Row>> results;
  std::vector<int64_t> actual;
  for (int64_t n : sizes) {
    int64_t rows = 0;
    results.push_back(measure(n, requests, store, &rows));
    actual.push_back(rows);
  }
  std::cout << fmt::format("HUD API latency (ms, {} requests each, store {})\n", requests, store);
  std::cout << fmt::format("{:<14}", "api");
  for (int64_t r : actual) std::cout << fmt::format(" {:>10}p50 {:>6}p95", r, "");
  std::cout << fmt::format(" {:>12}\n", "p50 growth");
  for (size_t a = 0; a < results[0].size(); ++a) {
    std::cout << fmt::format("{:<14}", results[0][a].api);
    for (const auto& r : results)
      std::cout << fmt::format(" {:>13.2f} {:>9.2f}", r[a].p50, r[a].p95);
    std::cout << fmt::format(" {:>11.1f}x\n",
                             results.back()[a].p50 / std::max(0.01, results[0][a].p50));
  }
  return 0;
}

}  // namespace ootci::bench::hud_api_latency
