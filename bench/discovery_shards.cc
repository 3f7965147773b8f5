// Sharded discovery (docs/select.md, "Sharded discovery"): `ootci discover` of upstream files on
// the reference backend, once unsharded and then as N shards run one after another on this
// machine (each shard's wall time is what one of N machines would take; the slowest is the
// wall time of all N), merged by `ootci evidence merge`; then `ootci select propose` from the
// unsharded evidence and from the merge. Prints variants, variants per second, crashes and
// hangs, each shard's time, the slowest shard over the unsharded time (target <= 0.3 for 4
// shards), and whether the two proposals are byte-identical (target: yes).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "base/error.h"
#include "base/file_text.h"
#include "evidence/evidence_store.h"
#include "ootci_process.h"

namespace fs = std::filesystem;

namespace ootci::bench::discovery_shards {

// Every file a proposal wrote, by name.
std::map<std::string, std::string> proposal(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& p : fs::directory_iterator(dir))
    out[p.path().filename().string()] = read_file_bytes(p.path().string()).value_or("");
  return out;
}

struct Counts {
  size_t variants = 0, crashed = 0, hung = 0;
};

Counts counts(const std::string& db) {
  Counts c;
  auto store = EvidenceStore::open(db);
  auto discoveries = store->latest_discoveries();
  if (discoveries.empty()) throw Error(fmt::format("{}: no discovery", db));
  for (const TestResult& r : store->results(discoveries.front().run_id)) {
    if (r.name.empty()) continue;
    ++c.variants;
    c.crashed += classify(r) == Seen::crash;
    c.hung += r.error_class == kTimeoutError;
  }
  return c;
}

int bench(const std::string& backend_dir, const std::string& python_root,
          const std::string& torch_root, const std::vector<std::string>& files, int shards,
          int workers, int probe_inputs, bool balanced, std::string dir) {
  if (dir.empty()) dir = make_temp_dir();
  fs::create_directories(dir);
  std::string config = dir + "/ootci.yaml";
  write_file(config, fmt::format("backend:\n  name: reference\n  device_type: privateuseone\n{}"
                                 "  modules: [ootci_reference_backend]\n  pythonpath: [{}]\n"
                                 "upstream:\n  torch_root: {}\n  device_root: {}\n"
                                 "test_configs: []\nworkspace: {}/ws\n",
                                 python_root.empty() ? "" : "  root: " + python_root + "\n",
                                 fs::absolute(backend_dir).string(), torch_root,
                                 fs::absolute(backend_dir).string(), dir));
  auto discover = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"discover",
                                     "--config",
                                     config,
                                     "--workers",
                                     std::to_string(workers),
                                     "--evidence",
                                     dir + "/" + name + ".db"};
    if (probe_inputs > 0) {
      args.push_back("--probe-inputs");
      args.push_back(std::to_string(probe_inputs));
    }
    args.push_back("--files");
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), extra.begin(), extra.end());
    double s = timed_ootci(dir + "/" + name + ".log", args);
    std::cout << fmt::format("  {:<12} {:>9.1f} s\n", name, s) << std::flush;
    return s;
  };

  std::cout << fmt::format("files: {}; {} shards{}; {} worker(s) per machine; work dir {}\n",
                           fmt::join(files, " "), shards,
                           balanced ? " placed by the unsharded run's durations (--timings)"
                                    : " split by the hash of each variant's id",
                           workers, dir);
  double whole = discover("unsharded", {});
  std::vector<std::string> dbs;
  double slowest = 0, sum = 0;
  for (int k = 1; k <= shards; ++k) {
    std::string name = fmt::format("shard-{}", k);
    std::vector<std::string> shard = {"--shard", fmt::format("{}/{}", k, shards)};
    // As a second discovery would: placed by the durations the first one recorded.
    if (balanced) shard.insert(shard.end(), {"--timings", dir + "/unsharded.db"});
    double s = discover(name, shard);
    slowest = std::max(slowest, s);
    sum += s;
    dbs.push_back(dir + "/" + name + ".db");
  }
  std::vector<std::string> merge = {"evidence", "merge"};
  merge.insert(merge.end(), dbs.begin(), dbs.end());
  merge.insert(merge.end(), {"--out", dir + "/merged.db"});
  double merge_s = timed_ootci(dir + "/merge.log", merge);
  for (const char* name : {"unsharded", "merged"})
    timed_ootci(
        dir + "/propose-" + name + ".log",
        {"select", "propose", "--config", config, "--evidence", fmt::format("{}/{}.db", dir, name),
         "--out", fmt::format("{}/proposed-{}", dir, name), "--variants",
         fmt::format("{}/proposed-{}.json", dir, name)});

  Counts c = counts(dir + "/unsharded.db");
  Counts m = counts(dir + "/merged.db");
  bool same = proposal(dir + "/proposed-unsharded") == proposal(dir + "/proposed-merged") &&
              read_file_bytes(dir + "/proposed-unsharded.json") ==
                  read_file_bytes(dir + "/proposed-merged.json");
  std::cout << fmt::format("variants: {} unsharded ({:.1f}/s; {} crashed, {} hung), {} merged\n",
                           c.variants, c.variants / whole, c.crashed, c.hung, m.variants);
  std::cout << fmt::format(
      "unsharded {:.1f} s; shards: slowest {:.1f} s, sum {:.1f} s (the cost of collecting each "
      "file in every shard: {:+.1f} s); merge {:.1f} s\n",
      whole, slowest, sum, sum - whole, merge_s);
  std::cout << fmt::format("slowest shard / unsharded: {:.2f} (target <= 0.3 for 4 shards)\n",
                           slowest / whole);
  std::cout << fmt::format("select propose from the merge: {} (target: byte-identical)\n",
                           same ? "byte-identical" : "DIFFERENT");
  return same ? 0 : 1;
}

int main(int argc, char** argv) {
  CLI::App app{"Sharded discovery: unsharded vs N shards one after another, merged, proposed"};
  std::vector<std::string> files = {"test/test_ops.py"};
  int shards = 4, workers = 1, probe_inputs = 0;
  bool balanced = false;
  std::string torch_root = std::getenv("TORCH_ROOT") ? std::getenv("TORCH_ROOT") : "";
  std::string python_root, workdir, backend_dir = "examples/reference-backend";
  app.add_option("--files", files, "upstream test files, relative to --torch-root");
  app.add_option("--shards", shards, "shards (N)")->check(CLI::Range(2, 64));
  app.add_option("--workers", workers, "workers per machine (one device each)")
      ->check(CLI::Range(1, 64));
  app.add_option("--probe-inputs", probe_inputs, "discovery's input probe passes")
      ->check(CLI::Range(0, 16));
  app.add_option("--torch-root", torch_root, "upstream PyTorch tree (default: $TORCH_ROOT)");
  app.add_option("--python-root", python_root,
                 "run the tests' Python in this root folder (backend.root)");
  app.add_flag("--balanced", balanced,
               "place the shards' variants by the unsharded run's durations (--timings), as a "
               "second discovery does");
  app.add_option("--workdir", workdir, "keep everything here (default: a temporary folder)");
  CLI11_PARSE(app, argc, argv);
  if (torch_root.empty()) {
    std::cerr << "discovery-shards: give --torch-root or set TORCH_ROOT\n";
    return 2;
  }
  try {
    return bench(backend_dir, python_root, torch_root, files, shards, workers, probe_inputs,
                 balanced, workdir);
  } catch (const std::exception& e) {
    std::cerr << "discovery-shards: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::discovery_shards
