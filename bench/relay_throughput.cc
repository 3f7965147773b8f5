// Webhook-to-dispatch throughput and latency of the relay process, under load from this process
// on loopback, against a baseline in the same run: the same relay fanning out synchronously inside
// the request, one attempt per target, as CRCR does. The targets answer instantly by default, or
// like GitHub on a real day (--latency-ms, --error-rate, --timeout-rate); the load is a burst from
// --senders concurrent senders, or a steady --rate. Prints, per mode, what was delivered, how fast
// the outbox drained, and how long GitHub's webhook request and the whole trip took.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <thread>

#include "base/time.h"
#include "testing/github_standin.h"
#include "testing/percentile.h"
#include "testing/relay_config.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::relay_throughput {

struct Options {
  int webhooks = 1000, targets = 10, senders = 8;
  double rate = 0;  // webhooks per second; 0: a burst
  std::string store = "sqlite";
  int latency_ms = 0;
  double error_rate = 0, timeout_rate = 0;
  int request_timeout_ms = 10000;  // the relay's; a target "timeout" answers 1 s after it
};

struct Result {
  std::string name;
  double seconds = 0;  // first webhook sent → last distinct dispatch received
  size_t owed = 0, delivered = 0, requests = 0;
  int webhook_errors = 0, gave_up = 0;  // non-200 answers; answers GitHub waits > 10 s for
  std::vector<double> request_ms;       // webhook request round trip, as the sender saw it
  std::vector<double> dispatch_ms;      // webhook sent → first dispatch recorded at the target
};

// workers 0: the synchronous baseline.
Result run(const Options& o, int workers) {
  std::string dir = make_temp_dir();
  auto standin = start_github_standin(dir, 7);
  standin->set_profile(
      {o.latency_ms, o.error_rate, o.timeout_rate, o.request_timeout_ms + 1000, 1});
  std::string allow = "L1:\n";
  for (int i = 0; i < o.targets; ++i) allow += fmt::format("  - bench/target{}\n", i);
  write_file(dir + "/allowlist.yml", allow);
  RelayYaml y = wired_relay(free_port(), fresh_store_uri(o.store), *standin);
  y.secret_env = "BENCH_SECRET";
  y.http_threads = 32;
  y.dispatch = fmt::format(
      "  synchronous: {}\n  workers: {}\n  request_timeout_ms: {}\n  initial_backoff_ms: 200\n"
      "  max_backoff_ms: 5000\n  max_attempts: 30\n",
      workers == 0, std::max(workers, 1), o.request_timeout_ms);
  RelayProcess relay(dir, relay_yaml(y), y.port, {{"BENCH_SECRET", "s3cret"}});
  relay.start();
  std::string body = read_file(fixture_path("github-webhooks/pull_request.opened.json"));

  Result r;
  r.name = workers == 0 ? "synchronous (CRCR)" : fmt::format("outbox, {} workers", workers);
  std::vector<int64_t> sent_at(o.webhooks);
  r.request_ms.resize(o.webhooks);
  std::atomic<int> next{0}, errors{0}, gave_up{0};
  int64_t t0 = now_ms();
  int64_t t0_us = steady_us();
  std::vector<std::thread> threads;
  // A steady rate needs as many senders as answers can be outstanding; a burst, --senders.
  int senders = o.rate > 0 ? 64 : o.senders;
  for (int s = 0; s < senders; ++s)
    threads.emplace_back([&] {
      for (int i; (i = next++) < o.webhooks;) {
        if (o.rate > 0) {
          int64_t due = t0_us + static_cast<int64_t>(i * 1e6 / o.rate);
          while (steady_us() < due) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        sent_at[i] = now_ms();
        int64_t start = steady_us();
        HttpResult res =
            send_webhook(relay.url(), "pull_request", fmt::format("bench-{}", i), body, "s3cret");
        r.request_ms[i] = (steady_us() - start) / 1000.0;
        if (r.request_ms[i] > 10000) gave_up++;
        if (res.status != 200) errors++;
      }
    });
  for (auto& t : threads) t.join();
  r.owed = static_cast<size_t>(o.webhooks) * o.targets;
  r.webhook_errors = errors;
  r.gave_up = gave_up;

  // The outbox delivers everything in the end; the baseline, only what its one attempt got
  // through, which has arrived by the time the requests are answered (but for late answers).
  std::map<std::string, int64_t> first;  // delivery:repo → first arrival
  int64_t settle_until = now_ms() + (workers == 0 ? o.request_timeout_ms + 2000 : 600000);
  size_t seen = 0;
  while (now_ms() < settle_until) {
    for (const auto& d : standin->dispatches(seen)) {
      seen++;
      first.emplace(d.client_payload.value("delivery_id", "") + ":" + d.repo, d.received_ms);
    }
    if (first.size() >= r.owed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int64_t last = t0;
  for (const auto& [key, at] : first) {
    last = std::max(last, at);
    int i = std::stoi(key.substr(6, key.find(':') - 6));
    r.dispatch_ms.push_back(static_cast<double>(at - sent_at[i]));
  }
  r.seconds = (last - t0) / 1000.0;
  r.delivered = first.size();
  r.requests = seen;
  relay.stop();
  standin->stop();
  return r;
}

int main(int argc, char** argv) {
  CLI::App app{"relay webhook-to-dispatch benchmark"};
  Options o;
  std::vector<int> workers = {16};
  app.add_option("--webhooks", o.webhooks);
  app.add_option("--targets", o.targets);
  app.add_option("--senders", o.senders, "concurrent senders of a burst");
  app.add_option("--rate", o.rate, "webhooks per second, steadily (default: a burst)");
  app.add_option("--store", o.store, "sqlite or postgres (needs OOTCI_TEST_PG_URI)");
  app.add_option("--latency-ms", o.latency_ms, "targets' mean answer time (default instant)");
  app.add_option("--error-rate", o.error_rate, "share of target requests answered 5xx");
  app.add_option("--timeout-rate", o.timeout_rate,
                 "share carried out but answered after the relay's request timeout");
  app.add_option("--request-timeout-ms", o.request_timeout_ms, "the relay's per request");
  app.add_option("--workers", workers, "dispatch.workers to compare, e.g. 8,64")->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  std::cout << fmt::format(
      "relay: {} webhooks x {} targets, {}, store {}; targets {} ms, {:.0f}% 5xx, {:.0f}% late\n",
      o.webhooks, o.targets,
      o.rate > 0 ? fmt::format("{}/s steadily", o.rate)
                 : fmt::format("a burst from {} senders", o.senders),
      o.store, o.latency_ms, o.error_rate * 100, o.timeout_rate * 100);
  std::vector<Result> results;
  for (int w : workers) results.push_back(run(o, w));
  results.push_back(run(o, 0));
  std::cout << fmt::format("{:<22} {:>9} {:>10} {:>11} {:>9} {:>9} {:>6} {:>9} {:>9}\n", "mode",
                           "delivered", "of owed", "dispatch/s", "req p50", "req p99", ">10 s",
                           "e2e p50", "e2e p99");
  for (const auto& r : results)
    std::cout << fmt::format(
        "{:<22} {:>9} {:>9.2f}% {:>11.0f} {:>7.0f}ms {:>7.0f}ms {:>6} {:>8.2f}s {:>8.2f}s\n",
        r.name, r.delivered, 100.0 * r.delivered / r.owed, r.delivered / r.seconds,
        percentile(r.request_ms, 0.5), percentile(r.request_ms, 0.99), r.gave_up,
        percentile(r.dispatch_ms, 0.5) / 1000, percentile(r.dispatch_ms, 0.99) / 1000);
  const Result& sync = results.back();
  for (size_t i = 0; i + 1 < results.size(); ++i) {
    const Result& r = results[i];
    std::cout << fmt::format(
        "{} / synchronous: delivered {:.3f}x, dispatch/s {:.2f}x, webhook answer p50 {:.3f}x, "
        "p99 {:.3f}x\n",
        r.name, static_cast<double>(r.delivered) / sync.delivered,
        (r.delivered / r.seconds) / (sync.delivered / sync.seconds),
        percentile(r.request_ms, 0.5) / percentile(sync.request_ms, 0.5),
        percentile(r.request_ms, 0.99) / percentile(sync.request_ms, 0.99));
  }
  if (results.size() > 2)
    std::cout << fmt::format(
        "drain rate {} / {}: {:.2f}x\n", results[results.size() - 2].name, results[0].name,
        (results[results.size() - 2].delivered / results[results.size() - 2].seconds) /
            (results[0].delivered / results[0].seconds));
  // The outbox owes everything: a shortfall there is a failure of the run.
  for (size_t i = 0; i + 1 < results.size(); ++i)
    if (results[i].delivered != results[i].owed) return 1;
  return 0;
}

}  // namespace ootci::bench::relay_throughput
