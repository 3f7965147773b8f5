// `ootci-bench NAME [options]`: every benchmark in one binary, one compile unit, one link (separate
// binaries cost scripts/test 122 core-s of compile just to keep them building). Each prints a ratio
// against a baseline measured in the same run; `ootci-bench NAME --help` gives its options.
#include <fmt/format.h>

#include <cstring>
#include <iostream>

namespace ootci::bench {

// Each benchmark's entry point: main in its own file's namespace.
#define OOTCI_BENCHMARK(name)      \
  namespace name {                 \
  int main(int argc, char** argv); \
  }
OOTCI_BENCHMARK(relay_throughput)
OOTCI_BENCHMARK(relay_chaos)
OOTCI_BENCHMARK(callback_throughput)
OOTCI_BENCHMARK(hud_api_latency)
OOTCI_BENCHMARK(junit_ingest)
OOTCI_BENCHMARK(runner_overhead)
OOTCI_BENCHMARK(fault_injection)
OOTCI_BENCHMARK(isolation)
OOTCI_BENCHMARK(report_page)
OOTCI_BENCHMARK(agent_chaos)
OOTCI_BENCHMARK(discovery_shards)
OOTCI_BENCHMARK(discovery_costs)
#undef OOTCI_BENCHMARK

struct Benchmark {
  const char* name;
  int (*main)(int, char**);
  const char* what;
};

constexpr Benchmark kBenchmarks[] = {
    {"relay-throughput", relay_throughput::main,
     "webhook to dispatch: the relay's outbox vs CRCR-style synchronous fan-out"},
    {"relay-chaos", relay_chaos::main,
     "SIGKILL under load, three store setups: webhooks, dispatches, callbacks lost (0) and "
     "duplicated"},
    {"callback-throughput", callback_throughput::main,
     "callbacks on SQLite and PostgreSQL (OOTCI_TEST_PG_URI) vs no storage"},
    {"hud-api-latency", hud_api_latency::main, "HUD API p50/p95 as the job history grows"},
    {"junit-ingest", junit_ingest::main,
     "streaming JUnit ingest (pugixml) vs Python xml.etree iterparse"},
    {"runner-overhead", runner_overhead::main, "ootci run vs bare pytest on the same plan"},
    {"isolation", isolation::main,
     "a crash-heavy device: --isolation fork vs spawn vs the physical limit"},
    {"report-page", report_page::main,
     "report.html of a 22,000-variant run against its results read back and junit.xml"},
    {"fault-injection", fault_injection::main,
     "select changed: recall and share of test time over injected faults"},
    {"discovery-shards", discovery_shards::main,
     "ootci discover unsharded vs N shards merged: wall time, variants/s, identical proposals"},
    {"discovery-costs", discovery_costs::main,
     "ootci discover per file on two or more backends: wall, variants/s, time in crashes and "
     "hangs"},
    {"agent-chaos", agent_chaos::main,
     "ootci agent SIGKILLed mid-run: each job completes exactly once, its run resumes"},
};

void usage(std::ostream& out) {
  out << "usage: ootci-bench NAME [options]   (NAME --help: its options)\n";
  for (const auto& b : kBenchmarks) out << fmt::format("  {:<21} {}\n", b.name, b.what);
}

}  // namespace ootci::bench

int main(int argc, char** argv) {
  using namespace ootci::bench;
  if (argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    usage(std::cout);
    return 0;
  }
  if (argc >= 2)
    for (const auto& b : kBenchmarks)
      if (!std::strcmp(argv[1], b.name)) return b.main(argc - 1, argv + 1);
  if (argc >= 2) std::cerr << fmt::format("ootci-bench: no benchmark named {}\n", argv[1]);
  usage(std::cerr);
  return 2;
}
