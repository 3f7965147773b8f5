// Sharded discovery (docs/select.md, "Sharded discovery"): `ootci discover` of upstream files on
// the reference backend, once unsharded and then as N shards run one after another on this
// machine (each shard's wall time is what one of N machines would take; the slowest is the
// wall time of all N), merged by `ootci evidence merge`; then `ootci select propose` from the
// unsharded evidence and from the merge. Prints variants, variants per second, crashes and
// hangs, each shard's time, the slowest shard over the unsharded time (target <= 0.3 for 4
// shards), and whether the two proposals are byte-identical (target: yes).
//
// --part unsharded or --part shards measures one half, for a file whose two halves do not fit in
// one sitting on a machine that keeps nothing between sittings: each half prints its proposal's
// SHA-256 (and keeps the proposal in the work dir), which the other half's, measured later, must
// equal.
//
// A whole test_ops.py takes hours a pass, more than one sitting: stopped (SIGINT or SIGTERM,
// passed on to the discovery under way) and run again with the same --workdir, the bench skips
// the steps that finished and each discovery continues where it stopped (docs/select.md), its
// seconds added to those spent before (steps.json in the work dir).
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/sha256.h"
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

// One digest of every file a proposal wrote and of its variant list, to compare proposals made in
// different sittings.
std::string proposal_digest(const std::string& dir, const std::string& variants) {
  std::string all;
  for (const auto& [name, text] : proposal(dir)) all += name + '\0' + text + '\0';
  return sha256_hex(all + read_file_bytes(variants).value_or(""));
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
    c.crashed += classify(r) == Seen::kCrash;
    c.hung += r.error_class == kTimeoutError;
  }
  return c;
}

// A stop (SIGINT, SIGTERM) is passed on to the discovery under way (in a process group of its
// own), which stops cleanly; the bench records the seconds spent and starts no other step.
volatile std::sig_atomic_t g_stopped = 0;
volatile pid_t g_discovery = 0;
void pass_stop_on(int) {
  g_stopped = 1;
  if (g_discovery > 0) kill(g_discovery, SIGINT);
}

// Each step's seconds over every invocation, and whether it finished.
class Steps {
 public:
  // `params`: what the bench measures; a work dir holding another measurement is refused.
  Steps(std::string path, const nlohmann::json& params) : path_(std::move(path)) {
    if (auto text = read_file_bytes(path_)) steps_ = nlohmann::json::parse(*text);
    if (steps_.contains("params") && steps_["params"] != params)
      throw Error(fmt::format("{} is of another measurement ({}, now {}): use another --workdir",
                              path_, steps_["params"].dump(), params.dump()));
    steps_["params"] = params;
  }
  bool done(const std::string& name) const {
    return steps_.contains(name) && steps_[name].value("done", false);
  }
  double seconds(const std::string& name) const {
    return steps_.contains(name) ? steps_[name].value("seconds", 0.0) : 0.0;
  }
  int invocations(const std::string& name) const {
    return steps_.contains(name) ? steps_[name].value("invocations", 0) : 0;
  }
  void add(const std::string& name, double seconds, bool done) {
    steps_[name] = {{"seconds", this->seconds(name) + seconds},
                    {"invocations", invocations(name) + 1},
                    {"done", done}};
    write_file_atomically(path_, steps_.dump(2) + "\n");
  }

 private:
  std::string path_;
  nlohmann::json steps_ = nlohmann::json::object();
};

int bench(const std::string& backend_dir, const std::string& python_root,
          const std::string& torch_root, const std::vector<std::string>& files, int shards,
          int workers, int probe_inputs, bool balanced, const std::string& part, std::string dir) {
  bool run_unsharded = part != "shards", run_shards = part != "unsharded";
  if (balanced && !run_unsharded)
    throw Error(
        "--balanced places the shards by the unsharded run's durations: not with --part "
        "shards");
  if (dir.empty()) dir = make_temp_dir();
  fs::create_directories(dir);
  // A copy outside any git checkout: its revision is a digest of its files, which an ootci commit
  // does not move, so a stopped discovery can still be continued after one. Kept once made.
  std::string backend = dir + "/backend";
  if (!fs::exists(backend)) {
    std::string partial = backend + ".partial";  // renamed once whole
    fs::remove_all(partial);
    for (const char* part : {"csrc", "ootci_reference_backend"}) {
      fs::create_directories(partial + "/" + part);
      fs::copy(backend_dir + "/" + part, partial + "/" + part, fs::copy_options::recursive);
    }
    fs::rename(partial, backend);
  }
  std::string config = dir + "/ootci.yaml";
  write_file(config, fmt::format("backend:\n  name: reference\n  device_type: privateuseone\n{}"
                                 "  modules: [ootci_reference_backend]\n  pythonpath: [{}]\n"
                                 "upstream:\n  torch_root: {}\n  device_root: {}\n"
                                 "test_configs: []\nworkspace: {}/ws\n",
                                 python_root.empty() ? "" : "  root: " + python_root + "\n",
                                 fs::absolute(backend).string(), torch_root,
                                 fs::absolute(backend).string(), dir));
  Steps steps(dir + "/steps.json", {{"files", files},
                                    {"shards", shards},
                                    {"workers", workers},
                                    {"probe_inputs", probe_inputs},
                                    {"balanced", balanced},
                                    {"torch_root", torch_root},
                                    {"python_root", python_root}});
  std::signal(SIGINT, pass_stop_on);
  std::signal(SIGTERM, pass_stop_on);
  auto discover = [&](const std::string& name, std::vector<std::string> extra) {
    if (steps.done(name)) {
      std::cout << fmt::format("  {:<12} {:>9.1f} s (done before; {} invocation(s))\n", name,
                               steps.seconds(name), steps.invocations(name))
                << std::flush;
      return steps.seconds(name);
    }
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
    if (g_stopped) throw Error(fmt::format("stopped before {}; run the same command again", name));
    std::string log = dir + "/" + name + ".log";
    TimedRun run = run_ootci(log, args, &g_discovery);
    bool done = run.status == 0;
    steps.add(name, run.seconds, done);
    if (!done && (g_stopped || (WIFEXITED(run.status) && WEXITSTATUS(run.status) == 130)))
      throw Error(
          fmt::format("stopped in {} after {:.1f} s ({:.1f} s in all); run the same "
                      "command again to continue it",
                      name, run.seconds, steps.seconds(name)));
    if (!done)
      throw Error(fmt::format("ootci discover exited with status {}; see {}", run.status, log));
    int invocations = steps.invocations(name);
    std::cout << fmt::format(
                     "  {:<12} {:>9.1f} s{}\n", name, steps.seconds(name),
                     invocations > 1 ? fmt::format(" (in {} invocations)", invocations) : "")
              << std::flush;
    return steps.seconds(name);
  };

  std::cout << fmt::format("files: {}; {} shards{}; {} worker(s) per machine; work dir {}\n",
                           fmt::join(files, " "), shards,
                           balanced ? " placed by the unsharded run's durations (--timings)"
                                    : " split by the hash of each variant's id",
                           workers, dir);
  auto propose = [&](const std::string& name) {
    timed_ootci(
        dir + "/propose-" + name + ".log",
        {"select", "propose", "--config", config, "--evidence", fmt::format("{}/{}.db", dir, name),
         "--out", fmt::format("{}/proposed-{}", dir, name), "--variants",
         fmt::format("{}/proposed-{}.json", dir, name)});
    std::string digest = proposal_digest(fmt::format("{}/proposed-{}", dir, name),
                                         fmt::format("{}/proposed-{}.json", dir, name));
    Counts c = counts(fmt::format("{}/{}.db", dir, name));
    std::cout << fmt::format("{}: {} variants ({} crashed, {} hung); proposal sha256 {}\n", name,
                             c.variants, c.crashed, c.hung, digest);
    return std::pair{digest, c};
  };
  double whole = 0;
  std::string unsharded_digest;
  if (run_unsharded) {
    whole = discover("unsharded", {});
    Counts c;
    std::tie(unsharded_digest, c) = propose("unsharded");
    std::cout << fmt::format("unsharded {:.1f} s ({:.2f} variants/s)\n", whole, c.variants / whole);
  }
  if (!run_shards) return 0;
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
  std::string merged_digest = propose("merged").first;
  std::cout << fmt::format("shards: slowest {:.1f} s, sum {:.1f} s; merge {:.1f} s\n", slowest, sum,
                           merge_s);
  if (!run_unsharded) return 0;
  std::cout << fmt::format(
      "the cost of collecting each file in every shard: {:+.1f} s\n"
      "slowest shard / unsharded: {:.2f} (target <= 0.3 for 4 shards)\n",
      sum - whole, slowest / whole);
  bool same = merged_digest == unsharded_digest;
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
  std::string part = "all", python_root, workdir, backend_dir = "examples/reference-backend";
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
  app.add_option("--part", part,
                 "measure both halves (all), or one: the unsharded run or the shards, each "
                 "printing its proposal's sha256 for a comparison made later")
      ->check(CLI::IsMember({"all", "unsharded", "shards"}));
  app.add_option("--workdir", workdir, "keep everything here (default: a temporary folder)");
  CLI11_PARSE(app, argc, argv);
  if (torch_root.empty()) {
    std::cerr << "discovery-shards: give --torch-root or set TORCH_ROOT\n";
    return 2;
  }
  try {
    return bench(backend_dir, python_root, torch_root, files, shards, workers, probe_inputs,
                 balanced, part, workdir);
  } catch (const std::exception& e) {
    std::cerr << "discovery-shards: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::discovery_shards
