#pragma once
// The backend owner's report of one run: a self-contained HTML page (inline CSS and SVG, no
// JavaScript, no network) with the verdict, what newly fails, flaky tests, errors grouped by
// message, the slowest files and tests, the op x dtype map, per-file trends, the triage verdict,
// the manifest and how to reproduce a failure. Gathering reads the evidence store; rendering is
// a pure function of what was gathered.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "evidence/judge.h"

namespace ootci {

struct TrendPoint {
  std::string run_id;
  int64_t started_ms = 0;
  FileOutcomes outcomes;  // of this file in that run (empty counts: the run did not have it)
};

struct ReportPage {
  RunInfo run;
  std::vector<TestResult> results;
  Verdict verdict;
  std::optional<RunInfo> last_green;
  // Per file, the last runs of the backend up to and including this one, oldest first.
  std::map<std::string, std::vector<TrendPoint>> trend;
  nlohmann::json triage;  // the run's triage_verdict.json (`ootci attribute`), or null
  // How to run one test as the run did: the plan's environment and the pytest command line.
  std::map<std::string, std::string> reproduce_env;
  std::string reproduce_dir;                     // the working directory ("" when unknown)
  std::vector<std::string> python;               // the argv that starts the backend's interpreter
  std::map<std::string, std::string> file_path;  // relpath -> path pytest was given
};

// Reads the run, its results, the last green run before it, `trend_runs` runs of history and
// `<run_dir>/triage_verdict.json` when `run_dir` is given. Throws Error for an unknown run.
ReportPage gather_report_page(EvidenceStore& store, const std::string& run_id,
                              const std::string& run_dir = "", int trend_runs = 10);
// The same for a run whose results the caller has read already (`ootci run` at its end).
ReportPage gather_report_page(EvidenceStore& store, const RunInfo& run,
                              std::vector<TestResult> results, const std::string& run_dir = "",
                              int trend_runs = 10);

std::string render_report_page(const ReportPage& report);

// A device's landing page: the op x dtype map and per-file counts over the latest finished run of
// every upstream file (of the newest `max_runs` runs of the backend).
struct DevicePage {
  std::string backend;
  std::vector<TestResult> results;                 // of each file, from its latest run
  std::map<std::string, std::string> run_of_file;  // relpath -> that run
  // <workspace>/bucket_changes.json (select propose/rebucket), or null.
  nlohmann::json bucket_changes;
};
DevicePage gather_device_page(EvidenceStore& store, const std::string& backend, int max_runs = 200);
// Reads bucket_changes.json beside the evidence (absent or unreadable: none).
void add_bucket_changes(DevicePage& page, const std::string& path);
std::string render_device_page(const DevicePage& page);

// The outcome class a map cell and a trend bar colour by, in the order a trend bar stacks them and
// the device page lists them; its text is the CSS class.
enum class PageClass { kPass, kXfail, kSkip, kFail };
PageClass outcome_class(Outcome outcome);
std::string to_string(PageClass page_class);

}  // namespace ootci
