// Webhook-to-dispatch throughput and latency of the relay process, under load from this process
// on loopback, against a baseline: the same relay fanning out synchronously inside the request,
// as CRCR does. Prints both and their ratio.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

#include "base/time.h"
#include "net/crypto.h"
#include "testing/github_standin.h"
#include "testing/percentile.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::relay_throughput {

struct Result {
  double seconds = 0;
  size_t dispatches = 0;
  std::vector<double> request_ms;   // webhook request round trip, as the sender saw it
  std::vector<double> dispatch_ms;  // webhook sent → dispatch recorded at the target
};

Result run(bool synchronous, int webhooks, int targets, int senders,
           const std::string& store_kind) {
  std::string dir = make_temp_dir();
  std::string key = generate_rsa_private_key_pem();
  write_file(dir + "/app.pem", key);
  GitHubStandin standin(7, public_key_pem_from_private(key));
  standin.start();
  std::string allow = "L1:\n";
  for (int i = 0; i < targets; ++i) allow += fmt::format("  - bench/target{}\n", i);
  write_file(dir + "/allowlist.yml", allow);
  int port = free_port();
  std::string cfg = fmt::format(R"(listen: 127.0.0.1:{}
upstream_repo: Codertocat/Hello-World
store: "{}"
allowlist: allowlist.yml
webhook_secret_env: BENCH_SECRET
http_threads: 32
github: {{api_url: "{}", app_id: 7, private_key_file: app.pem}}
dispatch: {{synchronous: {}, workers: 16}}
)",
                                port, fresh_store_uri(store_kind), standin.url(), synchronous);
  RelayProcess relay(dir, cfg, port, {{"BENCH_SECRET", "s3cret"}});
  relay.start();
  std::string body = read_file(fixture_path("github-webhooks/pull_request.opened.json"));

  Result r;
  std::vector<int64_t> sent_at(webhooks);
  std::vector<double> request_ms(webhooks);
  std::atomic<int> next{0};
  int64_t t0 = now_ms();
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s)
    threads.emplace_back([&] {
      for (int i; (i = next++) < webhooks;) {
        sent_at[i] = now_ms();
        int64_t start = steady_us();
        HttpResult res =
            send_webhook(relay.url(), "pull_request", fmt::format("bench-{}", i), body, "s3cret");
        request_ms[i] = (steady_us() - start) / 1000.0;
        if (res.status != 200)
          std::cerr << "webhook " << i << ": HTTP " << res.status << " " << res.body << "\n";
      }
    });
  for (auto& t : threads) t.join();
  size_t want = static_cast<size_t>(webhooks) * targets;
  if (!standin.wait_for_dispatches(want, 300000)) std::cerr << "timed out waiting for dispatches\n";
  auto got = standin.dispatches();
  int64_t last = t0;
  for (const auto& d : got) {
    last = std::max(last, d.received_ms);
    std::string id = d.client_payload.value("delivery_id", "");
    int i = std::stoi(id.substr(6));
    r.dispatch_ms.push_back(static_cast<double>(d.received_ms - sent_at[i]));
  }
  r.seconds = (last - t0) / 1000.0;
  r.dispatches = got.size();
  r.request_ms = request_ms;
  relay.stop();
  standin.stop();
  return r;
}

int main(int argc, char** argv) {
  CLI::App app{"relay webhook-to-dispatch benchmark"};
  int webhooks = 1000, targets = 10, senders = 8;
  std::string store = "sqlite";
  app.add_option("--webhooks", webhooks);
  app.add_option("--targets", targets);
  app.add_option("--senders", senders);
  app.add_option("--store", store, "sqlite or postgres (needs OOTCI_TEST_PG_URI)");
  CLI11_PARSE(app, argc, argv);
  std::cout << fmt::format("relay: {} webhooks x {} targets, {} concurrent senders, store {}\n",
                           webhooks, targets, senders, store);
  auto outbox = run(false, webhooks, targets, senders, store);
  auto sync = run(true, webhooks, targets, senders, store);
  auto line = [](const char* name, const Result& r) {
    std::cout << fmt::format("{:<22} {:>8} {:>12.0f} {:>10.1f} {:>10.1f} {:>12.0f} {:>10.0f}\n",
                             name, r.dispatches, r.dispatches / r.seconds,
                             percentile(r.request_ms, 0.5), percentile(r.request_ms, 0.99),
                             percentile(r.dispatch_ms, 0.5), percentile(r.dispatch_ms, 0.99));
  };
  std::cout << fmt::format("{:<22} {:>8} {:>12} {:>10} {:>10} {:>12} {:>10}\n", "mode", "dispatch",
                           "dispatch/s", "req p50ms", "req p99ms", "e2e p50 ms", "e2e p99ms");
  line("outbox (ootci)", outbox);
  line("synchronous (CRCR)", sync);
  std::cout << fmt::format(
      "ratio outbox/synchronous: throughput {:.2f}x, webhook p50 latency {:.3f}x, p99 {:.3f}x\n",
      (outbox.dispatches / outbox.seconds) / (sync.dispatches / sync.seconds),
      percentile(outbox.request_ms, 0.5) / percentile(sync.request_ms, 0.5),
      percentile(outbox.request_ms, 0.99) / percentile(sync.request_ms, 0.99));
  return outbox.dispatches == static_cast<size_t>(webhooks) * targets &&
                 sync.dispatches == static_cast<size_t>(webhooks) * targets
             ? 0
             : 1;
}

}  // namespace ootci::bench::relay_throughput
