// `ootci ingest|judge|history`: the evidence store from the command line: JUnit reports into it,
// the verdict on a run, and a test's results across runs (docs/run.md). `ootci evidence merge`:
// a sharded discovery's databases as one (docs/select.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_text.h"
#include "base/text.h"
#include "base/time.h"
#include "cli/commands.h"
#include "discover/discovery_merge.h"
#include "evidence/baseline.h"
#include "evidence/evidence_path.h"
#include "evidence/evidence_store.h"
#include "evidence/judge.h"
#include "evidence/junit_ingest.h"
#include "plan/backend_config.h"

namespace ootci {
namespace {

// Where --evidence, else --config's workspace, says the database is.
std::string evidence_db(const std::string& evidence_flag,
                        const std::optional<BackendConfig>& config) {
  if (!evidence_flag.empty()) return evidence_flag;
  if (config) return evidence_path(*config);
  throw Error("no evidence database: give --evidence DB or --config ootci.yaml");
}

std::optional<BackendConfig> optional_config(const std::string& path) {
  if (path.empty()) return std::nullopt;
  return load_backend_or_exit(path);
}

std::string counts_line(const std::vector<TestResult>& results) {
  std::map<Outcome, size_t> n;
  for (const auto& r : results) ++n[r.outcome];
  std::string out;
  for (Outcome outcome : kOutcomes)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n[outcome], to_string(outcome));
  return out;
}

struct IngestArgs {
  std::vector<std::string> files;
  std::string evidence, config, backend, run, second_stage;
};

// `ootci select wave2 -o FILE`: {"tests": [...], "ran": bool, "why": "..."}, the manifest's
// second_stage of a staged selection run in waves. Errors name the file and the field.
nlohmann::json read_second_stage(const std::string& path) {
  auto text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("--second-stage {}: cannot read it", path));
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(fmt::format("{}: not a JSON object (ootci select wave2 -o writes one)", path));
  const auto& tests = j.contains("tests") ? j["tests"] : nlohmann::json();
  if (!tests.is_array() ||
      !std::all_of(tests.begin(), tests.end(), [](const auto& t) { return t.is_string(); }))
    throw Error(fmt::format("{}: \"tests\" must be a list of test ids", path));
  if (!j.contains("ran") || !j["ran"].is_boolean())
    throw Error(fmt::format("{}: \"ran\" must be true or false", path));
  if (!j.contains("why") || !j["why"].is_string())
    throw Error(fmt::format("{}: \"why\" must be a string", path));
  return {{"tests", tests}, {"ran", j["ran"]}, {"why", j["why"]}};
}

void ingest(const IngestArgs& a) {
  std::optional<BackendConfig> config = optional_config(a.config);
  std::string db = evidence_db(a.evidence, config);
  nlohmann::json second_stage;
  if (!a.second_stage.empty()) second_stage = read_second_stage(a.second_stage);
  auto store = EvidenceStore::open(db);

  RunInfo run;
  run.id = a.run.empty() ? new_run_id(now_ms()) : a.run;
  if (store->run(run.id)) throw Error(fmt::format("run {} already exists in {}", run.id, db));
  run.backend = !a.backend.empty() ? a.backend : config ? config->name : "unknown";
  run.status = RunStatus::kRunning;
  run.started_ms = now_ms();
  nlohmann::json reports = nlohmann::json::array();
  for (const auto& f : a.files) reports.push_back(std::filesystem::absolute(f).string());
  run.manifest = {{"run_id", run.id},
                  {"backend", run.backend},
                  {"device_type", config ? config->device_type : ""},
                  {"config_hash", run.config_hash},
                  {"shard", nullptr},
                  {"source", "ingest"},
                  {"reports", reports},
                  {"started", iso8601_utc(run.started_ms)}};
  // Wave 2's tests and why it ran or not: the report page lists them apart.
  if (!second_stage.is_null()) run.manifest["second_stage"] = second_stage;
  store->begin_run(run);

  size_t testcases = 0;
  std::vector<TestResult> batch;
  auto flush = [&] {
    store->record_batch(run.id, batch);
    batch.clear();
  };
  try {
    for (const auto& file : a.files) {
      ingest_junit(file, [&](TestResult&& t) {
        if (t.device.empty() && config) t.device = config->device_type;
        t.finished_ms = now_ms();
        batch.push_back(std::move(t));
        ++testcases;
        if (batch.size() == kJunitBatchResults) flush();
      });
    }
    flush();
  } catch (const Error& e) {
    // What was read stays, marked as incomplete; the first error is the one to report.
    try {
      flush();
      run.manifest["ended"] = iso8601_utc(now_ms());
      store->finish_run(run.id, now_ms(), RunStatus::kInterrupted, std::nullopt, run.manifest);
    } catch (const Error&) {
    }
    throw Error(fmt::format("{} (run {} kept as interrupted, {} results)", e.what(), run.id,
                            store->finished_tests(run.id).size()));
  }

  std::vector<TestResult> results = store->results(run.id);
  Verdict verdict = judge(results, baseline_of(*store, run).results_or_null());
  int64_t ended = now_ms();
  run.manifest["ended"] = iso8601_utc(ended);
  store->finish_run(run.id, ended, RunStatus::kFinished, verdict.conclusion, run.manifest);

  std::cout << run.id << "\n";
  std::string replaced =
      testcases == results.size()
          ? ""
          : fmt::format(" ({} testcases; a repeated test id keeps its last)", testcases);
  std::cout << fmt::format("{} results from {} file{}{}: {}\n", results.size(), a.files.size(),
                           a.files.size() == 1 ? "" : "s", replaced, counts_line(results));
  std::cout << fmt::format("verdict: {}\n", to_string(verdict.conclusion));
}

struct HistoryArgs {
  std::string test_id, evidence, config;
  int limit = 20;
};

// What attribution and triage ask first: when did this test last pass, and how long does it take.
void history(const HistoryArgs& a) {
  std::string db = evidence_db(a.evidence, optional_config(a.config));
  if (!std::filesystem::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  auto store = EvidenceStore::open(db);
  std::vector<TestResult> rows = store->history(a.test_id, a.limit);
  if (rows.empty()) throw Error(fmt::format("no results for {} in {}", a.test_id, db));
  for (const auto& r : rows)
    std::cout << fmt::format("{}  {:8}  {:8.3f} s{}{}  {}\n", iso8601_utc(r.finished_ms),
                             to_string(r.outcome), r.duration_s, r.flaky ? "  flaky" : "",
                             r.error_class.empty() ? "" : "  " + r.error_class,
                             first_line(r.message, 100));
}

struct JudgeArgs {
  std::string run, evidence, config;
};

void judge_run(const JudgeArgs& a) {
  std::optional<BackendConfig> config = optional_config(a.config);
  std::string db = evidence_db(a.evidence, config);
  // Judging reads; an absent database is an unknown run, not a new empty file.
  if (!std::filesystem::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  auto store = EvidenceStore::open(db);
  std::optional<RunInfo> run = store->run(a.run);
  if (!run) throw Error(fmt::format("run {} not found in {}", a.run, db));

  std::vector<TestResult> results = store->results(run->id);
  Baseline green = baseline_of(*store, *run);
  Verdict verdict = judge(results, green.results_or_null());
  // A run that stopped early (or is still going, or was killed) did not run what it had to,
  // whatever it recorded so far.
  if (run->status != RunStatus::kFinished) {
    verdict.reasons.push_back(fmt::format("the run is {}, not finished", to_string(run->status)));
    verdict.conclusion = Conclusion::kFailure;
  }

  std::cout << fmt::format("run {}: backend {}, {}{}, {} results{}\n", run->id, run->backend,
                           to_string(run->status),
                           run->shard.empty() ? "" : ", shard " + run->shard, results.size(),
                           green.run ? ", last green run " + green.run->id : "");
  if (run->status == RunStatus::kRunning) std::cout << "note: the run is still running\n";
  std::cout << format_verdict(verdict);
  if (!verdict.success()) throw ExitStatus{1};
}

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out;
};

void merge(const MergeArgs& a) {
  MergeReport r = merge_discoveries(a.inputs, a.out);
  const MergeDecision& d = r.decision;
  for (const auto& p : d.kept) {
    std::cout << fmt::format("merged: {} (run {}, {}): {} files\n", p.db, p.run.id,
                             p.run.shard.empty() ? "whole files" : "shard " + p.run.shard,
                             p.files.size());
  }
  for (const auto& what : d.already) std::cout << fmt::format("already merged: {}\n", what);
  for (const auto& what : d.replaced) std::cout << fmt::format("replaced: {}\n", what);
  std::string parts = shard_parts_text(d.parts);
  std::cout << fmt::format(
      "{}: run {}, {} variants{}; {}\n", a.out, r.run_id, r.results,
      r.conflicts ? fmt::format(" ({} recorded by two runs: the later record kept)", r.conflicts)
                  : "",
      parts.empty() ? fmt::format("complete ({} of {})", d.parts.n, d.parts.n)
                    : fmt::format("partial: parts {} so far", parts));
}

}  // namespace

void add_evidence_commands(CLI::App& app) {
  auto* evidence = app.add_subcommand("evidence", "Work on evidence databases as a whole");
  evidence->require_subcommand(1);
  auto* mer = evidence->add_subcommand(
      "merge",
      "Merge the evidence of a sharded discovery (ootci discover --shard K/N, one database each) "
      "into one discovery, as one unsharded discovery would have stored it");
  static MergeArgs merge_args;
  mer->add_option("DB", merge_args.inputs, "the shards' evidence databases")->required();
  mer->add_option("--out", merge_args.out,
                  "the merged database (new, or one holding only an earlier merge)")
      ->required();
  mer->callback([] { merge(merge_args); });

  auto* ing = app.add_subcommand("ingest", "Record pytest JUnit XML reports as a finished run");
  static IngestArgs ingest_args;
  ing->add_option("FILE", ingest_args.files, "JUnit XML reports")->required();
  ing->add_option("--evidence", ingest_args.evidence,
                  "evidence.db (default: <workspace>/evidence.db)");
  ing->add_option("--config", ingest_args.config, "ootci.yaml: workspace, backend name, device");
  ing->add_option("--backend", ingest_args.backend, "backend name (default: from --config)");
  ing->add_option("--run", ingest_args.run, "run id (default: a new one)");
  ing->add_option("--second-stage", ingest_args.second_stage,
                  "a staged selection's wave 2 decision (ootci select wave2 -o), kept in the run's "
                  "manifest");
  ing->callback([] { ingest(ingest_args); });

  auto* jud =
      app.add_subcommand("judge", "Print a run's verdict; exit 0 for success, 1 for failure");
  static JudgeArgs judge_args;
  jud->add_option("--run", judge_args.run, "run id")->required();
  jud->add_option("--evidence", judge_args.evidence,
                  "evidence.db (default: <workspace>/evidence.db)");
  jud->add_option("--config", judge_args.config, "ootci.yaml whose workspace holds evidence.db");
  jud->callback([] { judge_run(judge_args); });

  auto* his = app.add_subcommand("history", "A test's results across runs, newest first");
  static HistoryArgs history_args;
  his->add_option("test_id", history_args.test_id, "relpath::Class::name")->required();
  his->add_option("--limit", history_args.limit)->check(CLI::Range(1, 100000));
  his->add_option("--evidence", history_args.evidence,
                  "evidence.db (default: <workspace>/evidence.db)");
  his->add_option("--config", history_args.config, "ootci.yaml whose workspace holds evidence.db");
  his->callback([] { history(history_args); });
}

}  // namespace ootci
