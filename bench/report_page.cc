// The run report at upstream scale: gathering and rendering report.html for a run of 22,000
// variants (OpInfo-style op and dtype, the outcome mix of a new device, failure messages) with
// ten earlier runs of history, against what every run already writes from the same store: its
// results read back and the merged JUnit XML. Prints both times, the ratio and the page's size
// (targets: under 2 s and 5 MB).
#include "evidence/report_page.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/time.h"
#include "evidence/evidence_store.h"
#include "evidence/run_outputs.h"
#include "testing/test_env.h"

namespace ootci::bench::report_page {

const char* kDtypes[] = {"bool",    "uint8",    "int8",    "int16",   "int32",     "int64",
                         "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};

std::vector<TestResult> variants(int count, int run) {
  std::vector<TestResult> out;
  for (int i = 0; i < count; ++i) {
    TestResult t;
    int file = i % 12, op = (i / 12) % 160, dtype = (i / 7) % 12;
    t.file = fmt::format("test/test_file_{}.py", file);
    t.cls = "TestPRIVATEUSEONE";
    t.name = fmt::format("test_variant_{}_op{}_privateuseone_{}", i, op, kDtypes[dtype]);
    t.test_id = t.file + "::" + t.cls + "::" + t.name;
    if (i % 5 != 0) {  // four in five variants come from an OpInfo
      t.op = fmt::format("op_{}", op);
      t.dtype = kDtypes[dtype];
    }
    t.mode = i % 31 == 0 ? TestMode::kXfail : TestMode::kMandatorySuccess;
    int h = (i * 7919 + run * 104729) % 100;
    t.outcome = h < 84   ? Outcome::kPassed
                : h < 89 ? Outcome::kFailed
                : h < 92 ? Outcome::kError
                : h < 97 ? Outcome::kSkipped
                         : Outcome::kXfailed;
    if (is_failure(t.outcome)) {
      t.error_class = t.outcome == Outcome::kError ? "SIGSEGV" : "AssertionError";
      t.message = fmt::format(
          "AssertionError: Tensor-likes are not close!\n\nMismatched elements: {} / 1024 "
          "(0.{}%)\nGreatest absolute difference: 0.0{} at index (3, {}) (up to 1e-05 allowed)\n"
          "Greatest relative difference: 0.{} at index (3, {}) (up to 1.3e-06 allowed)",
          i % 97, i % 9, i % 13, i % 17, i % 11, i % 19);
    }
    t.duration_s = 0.01 + (i % 50) * 0.003;
    t.finished_ms = 1;
    out.push_back(std::move(t));
  }
  return out;
}

int bench(int count, int history) {
  std::string dir = make_temp_dir();
  auto store = EvidenceStore::open(dir + "/evidence.db");
  std::string run_id;
  for (int run = 0; run <= history; ++run) {
    RunInfo r;
    r.id = fmt::format("r-{:03}", run);
    r.backend = "bench";
    r.config_hash = "h";
    r.status = RunStatus::kRunning;
    r.started_ms = 1'000'000 + run * 3'600'000;
    store->begin_run(r);
    store->record_batch(r.id, variants(count, run));
    store->finish_run(r.id, r.started_ms + 1'800'000, RunStatus::kFinished,
                      run % 3 ? Conclusion::kFailure : Conclusion::kSuccess, {{"run_id", r.id}});
    run_id = r.id;
  }

  int64_t start = steady_us();
  std::vector<TestResult> results = store->results(run_id);
  write_junit(dir + "/junit.xml", results);
  double junit_s = (steady_us() - start) / 1e6;

  start = steady_us();
  ReportPage page = gather_report_page(*store, run_id, dir);
  double gather_s = (steady_us() - start) / 1e6;
  start = steady_us();
  std::string html = render_report_page(page);
  write_file_atomically(dir + "/report.html", html);
  double render_s = (steady_us() - start) / 1e6;

  std::cout << fmt::format("variants: {}  earlier runs: {}\n", results.size(), history);
  std::cout << fmt::format("results read back + junit.xml (baseline): {:7.3f} s\n", junit_s);
  std::cout << fmt::format(
      "report: gather {:.3f} s + render and write {:.3f} s = {:7.3f} s "
      "(target < 2 s)\n",
      gather_s, render_s, gather_s + render_s);
  std::cout << fmt::format("ratio report/baseline: {:.2f}\n", (gather_s + render_s) / junit_s);
  std::cout << fmt::format("report.html: {:.2f} MB (target < 5 MB); junit.xml: {:.2f} MB\n",
                           html.size() / 1e6, std::filesystem::file_size(dir + "/junit.xml") / 1e6);
  std::cout << fmt::format("files: {}\n", dir);
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"report.html of a large run against its JUnit XML"};
  int count = 22000, history = 10;
  app.add_option("--variants", count, "variants in the run")->check(CLI::Range(1, 1'000'000));
  app.add_option("--history", history, "earlier runs (the trend)")->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  try {
    return bench(count, history);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::report_page
