// The runner's isolation on a new device that crashes often: `ootci run` of the same variants
// under a crash-heavy fault profile of the reference backend (ops that crash the process, ops
// that are missing) with --isolation fork against --isolation spawn, in one run, checking that
// both give the same record for every variant; and against "the physical limit": the same
// variants with the crashing and failing ones left out, under fork. Prints the wall times and
// the ratios.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/error.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "evidence/evidence_store.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci::bench::isolation {

// What a run records of a variant, without the free-text message.
using Record = std::tuple<std::string, std::string, int, bool, std::string>;

struct Run {
  double seconds = 0;
  std::map<std::string, Record> records;
  std::map<std::string, TestResult> results;
};

Run run(const std::string& dir, const std::string& name, const std::string& isolation,
        const std::string& selection) {
  std::string ootci =
      std::string(std::getenv("OOTCI_BINARY_DIR") ? std::getenv("OOTCI_BINARY_DIR") : "build") +
      "/ootci";
  SpawnOptions o;
  o.argv = {ootci,         "run",     "--config",   dir + "/ootci.yaml",
            "--isolation", isolation, "--workers",  "1",
            "--select",    selection, "--evidence", dir + "/" + name + ".db",
            "--run-id",    name};
  o.output_file = dir + "/" + name + ".log";
  int64_t start = steady_us();
  int status = Subprocess::spawn(o).wait();
  Run r;
  r.seconds = (steady_us() - start) / 1e6;
  if (status != 0 && status != (1 << 8))  // exit 1: the run has failures, as it should
    throw Error(
        fmt::format("ootci run ({}) exited with status {}; see {}", name, status, o.output_file));
  for (auto& t : EvidenceStore::open(dir + "/" + name + ".db")->results(name)) {
    r.records[t.test_id] = {to_string(t.outcome), t.error_class, t.reruns, t.flaky,
                            mode_text(t.mode)};
    r.results[t.test_id] = std::move(t);
  }
  return r;
}

int bench(const std::string& backend_dir, const std::string& configs_dir,
          const std::string& python_root, const std::string& torch_root,
          const std::vector<std::string>& files, const std::string& crash_ops,
          const std::string& missing_ops) {
  std::string dir = make_temp_dir();
  std::string configs;
  for (const auto& p : fs::directory_iterator(configs_dir))
    if (p.path().extension() == ".yaml")
      configs += fmt::format("  - {}\n", fs::absolute(p.path()).string());
  write_file(dir + "/ootci.yaml",
             fmt::format("backend:\n  name: reference\n  device_type: privateuseone\n{6}"
                         "  modules: [ootci_reference_backend]\n  pythonpath: [{0}]\n  env:\n"
                         "    OOTCI_REF_CRASH_OPS: \"{1}\"\n    OOTCI_REF_DISABLED_OPS: \"{2}\"\n"
                         "upstream:\n  torch_root: {3}\n  device_root: {0}\n"
                         "test_configs:\n{4}workspace: {5}/ws\n",
                         fs::absolute(backend_dir).string(), crash_ops, missing_ops, torch_root,
                         configs, dir, python_root.empty() ? "" : "  root: " + python_root + "\n"));
  nlohmann::json selection = {{"files", files}};
  write_file(dir + "/all.json", selection.dump());

  Run fork = run(dir, "fork", "fork", dir + "/all.json");
  Run spawn = run(dir, "spawn", "spawn", dir + "/all.json");
  // The physical limit: only the variants that neither crashed nor failed, in one fork server.
  nlohmann::json healthy = {{"tests", nlohmann::json::array()}};
  size_t crashed = 0, failed = 0;
  for (const auto& [id, r] : fork.results) {
    bool crash = classify(r) == Seen::kCrash;
    bool fail = is_failure(r.outcome);
    crashed += crash;
    failed += fail && !crash;
    if (!fail && r.name.size()) healthy["tests"].push_back(id);
  }
  write_file(dir + "/healthy.json", healthy.dump());
  Run limit = run(dir, "limit", "fork", dir + "/healthy.json");

  size_t differ = 0;
  for (const auto& [id, rec] : spawn.records)
    differ += fork.records.count(id) == 0 || fork.records[id] != rec;
  differ +=
      fork.records.size() > spawn.records.size() ? fork.records.size() - spawn.records.size() : 0;

  std::cout << fmt::format("files: {}; crashing ops: {}; missing ops: {}; one worker\n",
                           fmt::join(files, ","), crash_ops, missing_ops);
  std::cout << fmt::format("variants: {} ({} crashed, {} failed or errored otherwise)\n",
                           fork.records.size(), crashed, failed);
  std::cout << fmt::format("{:<44} {:>9}\n", "run", "seconds");
  std::cout << fmt::format("{:<44} {:>9.1f}\n", "--isolation spawn", spawn.seconds);
  std::cout << fmt::format("{:<44} {:>9.1f}\n", "--isolation fork", fork.seconds);
  std::cout << fmt::format(
      "{:<44} {:>9.1f}\n",
      fmt::format("physical limit ({} healthy variants, fork)", healthy["tests"].size()),
      limit.seconds);
  std::cout << fmt::format(
      "ratio spawn/fork: {:.1f}x (target >= 5); fork/limit: {:.2f}x "
      "(target <= 1.3)\n",
      spawn.seconds / fork.seconds, fork.seconds / limit.seconds);
  // What each crash costs beyond the limit: a process of its own (the fork, the set-up, the test
  // up to the crash, the copy-on-write faults, the exit).
  if (crashed)
    std::cout << fmt::format("fork beyond the limit: {:.1f} ms per crashed variant\n",
                             (fork.seconds - limit.seconds) * 1000 / crashed);
  std::cout << fmt::format("records differing between fork and spawn: {}\nlogs: {}\n", differ, dir);
  return differ == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  CLI::App app{"ootci run on a crash-heavy device: fork against spawn and the physical limit"};
  std::string backend = "examples/reference-backend";
  std::string torch_root = std::getenv("TORCH_ROOT") ? std::getenv("TORCH_ROOT") : OOTCI_TORCH_ROOT;
  std::vector<std::string> files = {"test/test_view_ops.py"};
  std::string crash_ops = "mul,max,bitwise_not";
  std::string missing_ops = "sum,div,clone,complex,nonzero,isnan";
  std::string configs, python_root;
  app.add_option("--backend", backend, "the reference backend's folder");
  app.add_option("--configs", configs, "its configs to run (default: BACKEND/configs)");
  app.add_option(
      "--python-root", python_root,
      "run the tests' Python in this root folder (backend.root), e.g. the torch 2.6 bed");
  app.add_option("--torch-root", torch_root, "upstream PyTorch tree (default $TORCH_ROOT)");
  app.add_option("--files", files, "plan files (relpaths) to run")->delimiter(',');
  app.add_option("--crash-ops", crash_ops, "OOTCI_REF_CRASH_OPS: ops that crash the process");
  app.add_option("--missing-ops", missing_ops, "OOTCI_REF_DISABLED_OPS: ops that are missing");
  CLI11_PARSE(app, argc, argv);
  try {
    return bench(backend, configs.empty() ? backend + "/configs" : configs, python_root, torch_root,
                 files, crash_ops, missing_ops);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::isolation
