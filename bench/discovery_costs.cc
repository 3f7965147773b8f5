// What discovery costs on each backend (docs/select.md, "What discovery costs"): `ootci discover`
// of the same upstream files under two or more ootci.yaml (e.g. the reference backend and OpenReg
// in the torch 2.6 bed), file by file. For each file and backend: the wall time of both passes and
// of the plain one, variants per second, crashes and hangs, and where the plain pass's worker time
// went: inside tests that ended (passed, failed, skipped), inside tests that crashed or hung
// (their recorded time: a hang's limit, a dead helper's grace), and outside tests (collection,
// starting processes again after a crash, reruns). The first backend is the baseline.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "base/error.h"
#include "evidence/evidence_path.h"
#include "evidence/evidence_store.h"
#include "ootci_process.h"
#include "plan/backend_config.h"

namespace fs = std::filesystem;

namespace ootci::bench::discovery_costs {

struct Cost {
  double wall = 0, plain_wall = 0;
  size_t variants = 0, crashed = 0, hung = 0;
  double in_ended = 0, in_crashed_or_hung = 0, outside = 0;  // worker-seconds of the plain pass
  size_t attempts = 0;  // test processes the plain pass started (work/N folders)
};

Cost measure(const BackendConfig& backend, const std::string& db, const std::string& relpath,
             int workers, double wall) {
  Cost c;
  c.wall = wall;
  auto store = EvidenceStore::open(db);
  std::string run_id;
  for (const auto& d : store->latest_discoveries())
    if (d.relpath == relpath) run_id = d.run_id;
  if (run_id.empty()) throw Error(fmt::format("{}: no discovery of {}", db, relpath));
  auto run = store->run(run_id);
  c.plain_wall = (run->ended_ms - run->started_ms) / 1e3;
  for (const TestResult& r : store->results(run_id)) {
    if (r.name.empty() || r.file != relpath) continue;
    ++c.variants;
    Seen seen = classify(r);
    c.crashed += seen == Seen::kCrash;
    c.hung += seen == Seen::kHang;
    (seen == Seen::kCrash || seen == Seen::kHang ? c.in_crashed_or_hung : c.in_ended) +=
        r.duration_s;
  }
  c.outside = std::max(0.0, c.plain_wall * workers - c.in_ended - c.in_crashed_or_hung);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_folder(backend, run_id) + "/work", ec))
    c.attempts += e.is_directory();
  return c;
}

int bench(const std::vector<std::string>& named_configs, const std::vector<std::string>& files,
          int workers, std::string dir) {
  if (dir.empty()) dir = make_temp_dir();
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> configs;  // name, path
  for (const auto& nc : named_configs) {
    auto eq = nc.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(fmt::format("--config {}: expected NAME=PATH", nc));
    configs.emplace_back(nc.substr(0, eq), fs::absolute(nc.substr(eq + 1)).string());
  }
  std::cout << fmt::format("files: {}; {} worker(s); work dir {}\n", fmt::join(files, " "), workers,
                           dir);
  std::cout << fmt::format(
      "{:<28} {:<10} {:>8} {:>8} {:>8} {:>9} {:>7} {:>5} {:>9} {:>9} {:>9} "
      "{:>8}\n",
      "file", "backend", "wall s", "plain s", "variants", "variants/s", "crashed", "hung",
      "in ended", "in crash", "outside", "attempts");
  std::map<std::string, double> total;
  for (const auto& file : files) {
    for (const auto& [name, config] : configs) {
      BackendConfigResult loaded = load_backend_config(config);
      if (!loaded.config) throw Error(loaded.errors.front());
      std::string db = fmt::format("{}/{}.db", dir, name);
      std::string log = fmt::format("{}/{}-{}.log", dir, name, fs::path(file).stem().string());
      // The database is the bench's own: ootci.yaml's stays as it is.
      double wall = timed_ootci(log, {"discover", "--config", config, "--files", file, "--force",
                                      "--workers", std::to_string(workers), "--evidence", db});
      Cost c = measure(*loaded.config, db, file, workers, wall);
      total[name] += wall;
      std::cout << fmt::format(
                       "{:<28} {:<10} {:>8.1f} {:>8.1f} {:>8} {:>9.2f} {:>7} {:>5} {:>9.0f} "
                       "{:>9.0f} {:>9.0f} {:>8}\n",
                       file, name, c.wall, c.plain_wall, c.variants,
                       c.variants / std::max(c.plain_wall, 1e-9), c.crashed, c.hung, c.in_ended,
                       c.in_crashed_or_hung, c.outside, c.attempts)
                << std::flush;
    }
  }
  const std::string& base = configs.front().first;
  for (const auto& [name, config] : configs)
    std::cout << fmt::format("total {:<10} {:>8.1f} s ({:.2f}x {})\n", name, total[name],
                             total[name] / std::max(total[base], 1e-9), base);
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"What discovery costs on each backend, file by file"};
  std::vector<std::string> configs, files;
  int workers = 2;
  std::string workdir;
  app.add_option("--config", configs,
                 "NAME=ootci.yaml, once per backend; the first is the baseline")
      ->required();
  app.add_option("--files", files, "upstream test files, relative to upstream.torch_root")
      ->required();
  app.add_option("--workers", workers, "workers (test processes at once)")
      ->check(CLI::Range(1, 64));
  app.add_option("--workdir", workdir, "keep everything here (default: a temporary folder)");
  CLI11_PARSE(app, argc, argv);
  try {
    return bench(configs, files, workers, workdir);
  } catch (const std::exception& e) {
    std::cerr << "discovery-costs: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::discovery_costs
