// The runner's overhead: `ootci run` against bare pytest on the same selected tests, in the same
// run. Both run under the same plan environment; bare pytest gets every file in one process,
// ootci gets one process per file plus its event stream, evidence writes, manifest and JUnit.
// Prints both wall times and the ratio.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_text.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "plan/backend_config.h"
#include "plan/plan_env.h"
#include "testing/test_env.h"

namespace ootci::bench::runner_overhead {
namespace fs = std::filesystem;

double timed(const SpawnOptions& options) {
  int64_t start = steady_us();
  int status = Subprocess::spawn(options).wait();
  double seconds = (steady_us() - start) / 1e6;
  if (status != 0 && status != (1 << 8))  // pytest and ootci exit 1 on a failing test
    throw Error(fmt::format("{} exited with status {}", options.argv[0], status));
  return seconds;
}

int bench(const std::string& config, const std::vector<std::string>& only, int repeat,
          int workers) {
  BackendConfigResult loaded = load_backend_config(config);
  if (!loaded.config) throw Error(loaded.errors.front());
  const BackendConfig& backend = *loaded.config;
  std::string ootci =
      std::string(std::getenv("OOTCI_BINARY_DIR") ? std::getenv("OOTCI_BINARY_DIR") : "build") +
      "/ootci";
  std::string dir = make_temp_dir();
  std::string plan_path = dir + "/plan.json";
  // `ootci plan resolve`, not resolve_plan() here: with backend.root, choosing the config set asks
  // the root's Python for its torch through `ootci chroot`, which this binary does not have.
  SpawnOptions resolve;
  resolve.argv = {ootci, "plan", "resolve", "--config", config, "-o", plan_path};
  CapturedRun resolved = run_captured(resolve);
  if (!resolved.ok())
    throw Error(fmt::format("ootci plan resolve --config {}: {}", config, resolved.err));
  nlohmann::json plan = nlohmann::json::parse(read_file_or_empty(plan_path));
  auto env = plan_environment(backend, plan_path, ootci_python_dir(), process_env("PYTHONPATH"));

  // backend.root: bare pytest runs in the root too, through the same `ootci chroot`.
  std::vector<std::string> python =
      python_command(backend, ootci_python_dir(), fs::absolute(ootci).string());
  python.insert(python.end(), {"-m", "pytest", "-p", "no:cacheprovider", "-q"});
  SpawnOptions bare{python, env, dir + "/bare.log", dir};
  nlohmann::json selection = {{"files", nlohmann::json::array()}};
  size_t files = 0;
  for (const auto& f : plan["files"]) {
    std::string relpath = f["relpath"];
    if (!only.empty() && std::find(only.begin(), only.end(), relpath) == only.end()) continue;
    bare.argv.push_back(f["path"].get<std::string>());
    selection["files"].push_back(relpath);
    ++files;
  }
  if (files == 0) throw Error("no plan file matches --only");
  write_file(dir + "/selection.json", selection.dump());
  SpawnOptions runner{{ootci, "run", "--config", config, "--workers", std::to_string(workers),
                       "--evidence", dir + "/evidence.db", "--select", dir + "/selection.json"},
                      {},
                      dir + "/ootci.log",
                      ""};
  std::vector<double> bare_s, ootci_s;
  for (int i = 0; i < repeat; ++i) {
    bare_s.push_back(timed(bare));
    ootci_s.push_back(timed(runner));
  }
  std::sort(bare_s.begin(), bare_s.end());
  std::sort(ootci_s.begin(), ootci_s.end());
  double b = bare_s[bare_s.size() / 2], o = ootci_s[ootci_s.size() / 2];
  std::cout << fmt::format("files: {}  repeats: {}  ootci workers: {}\n", files, repeat, workers);
  std::cout << fmt::format("bare pytest (one process):   {:8.2f} s (median)\n", b);
  std::cout << fmt::format("ootci run:                   {:8.2f} s (median)\n", o);
  std::cout << fmt::format("ratio ootci/bare:            {:8.2f}\n", o / b);
  std::cout << fmt::format("logs: {}\n", dir);
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"ootci run against bare pytest on the same plan"};
  std::string config = "examples/reference-backend/ootci.yaml";
  int repeat = 3, workers = 1;
  std::vector<std::string> only = {"test/test_view_ops.py", "test/test_reductions.py"};
  app.add_option("--config", config, "ootci.yaml whose plan both run");
  app.add_option("--only", only, "plan files (relpaths) to run; default: view ops and reductions");
  app.add_option("--repeat", repeat)->check(CLI::Range(1, 20));
  app.add_option("--workers", workers, "ootci run --workers (1 = as sequential as bare pytest)");
  CLI11_PARSE(app, argc, argv);
  try {
    return bench(config, only, repeat, workers);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::runner_overhead
