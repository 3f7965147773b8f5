#include "run/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_lock.h"
#include "base/file_text.h"
#include "base/time.h"
#include "evidence/baseline.h"
#include "evidence/evidence_path.h"
#include "evidence/judge.h"
#include "evidence/report_page.h"
#include "evidence/run_outputs.h"
#include "plan/plan_env.h"
#include "plan/plan_resolve.h"
#include "run/file_attempts.h"
#include "run/file_workers.h"
#include "run/progress.h"
#include "run/run_manifest.h"
#include "run/test_limits.h"
#include "select/second_stage.h"
#include "select/shards.h"
#include "select/waves.h"

namespace fs = std::filesystem;

namespace ootci {

std::string run_isolation(const BackendConfig& backend) {
  return backend.fork_safe ? backend.run.isolation : "spawn";
}

namespace {

// Each file as one part per worker, so that no worker sits idle while one large file runs.
// Each part collects the whole file, which costs little beside running it.
std::vector<PlanFile> shared_among_workers(const std::vector<PlanFile>& files, int workers) {
  if (workers < 2) return files;
  std::vector<PlanFile> out;  // a file's parts next to each other: the longest file starts first
  for (const PlanFile& f : files)
    for (int k = 1; k <= workers; ++k) {
      PlanFile part = f;
      part.subpart = k;
      part.subparts = workers;
      out.push_back(std::move(part));
    }
  return out;
}

std::vector<PlanFile> plan_files(const nlohmann::json& plan, const std::optional<Selection>& sel) {
  std::vector<PlanFile> out;
  for (const auto& f : plan["files"]) {
    PlanFile pf{f["path"].get<std::string>(), f["relpath"].get<std::string>(), std::nullopt,
                std::nullopt};
    if (sel && !sel->files.count(pf.relpath)) {
      std::vector<std::string> tests, bases;
      for (const auto& id : sel->tests)
        if (id.rfind(pf.relpath + "::", 0) == 0) tests.push_back(id);
      for (const auto& base : sel->bases)
        if (base.rfind(pf.relpath + "::", 0) == 0) bases.push_back(base);
      if (tests.empty() && bases.empty()) continue;
      pf.only = tests;
      if (!bases.empty()) pf.bases = bases;
    }
    out.push_back(std::move(pf));
  }
  return out;
}

}  // namespace

std::vector<std::string> files_with_labels(const nlohmann::json& plan,
                                           const std::vector<std::string>& labels,
                                           std::vector<std::string>* unlabelled) {
  std::vector<std::string> out;
  for (const auto& f : plan["files"]) {
    auto have = f.value("labels", std::vector<std::string>{});
    if (have.empty() && unlabelled) unlabelled->push_back(f["relpath"].get<std::string>());
    for (const auto& l : labels)
      if (std::find(have.begin(), have.end(), l) != have.end()) {
        out.push_back(f["relpath"].get<std::string>());
        break;
      }
  }
  return out;
}

namespace {

// Shard K of N over whole files, as `ootci shards` assigns them from the same evidence.
std::vector<PlanFile> shard_of(const std::vector<PlanFile>& files, EvidenceStore& store, int k,
                               int n) {
  std::vector<std::string> relpaths;
  for (const auto& f : files) relpaths.push_back(f.relpath);
  std::vector<Shard> shards =
      assign_shards(shard_units(relpaths, store.test_durations(), ShardBy::kFile), n);
  const auto& mine = shards.at(static_cast<size_t>(k - 1)).units;
  std::vector<PlanFile> out;
  for (const auto& f : files)
    if (std::binary_search(mine.begin(), mine.end(), f.relpath)) out.push_back(f);
  return out;
}

// Longest files first (by recorded time), so the slowest file never starts last.
void order_longest_first(std::vector<PlanFile>& files, const std::map<std::string, double>& took) {
  auto seconds = [&](const PlanFile& f) {
    auto it = took.find(f.relpath);
    return it == took.end() ? -1.0 : it->second;
  };
  std::stable_sort(files.begin(), files.end(),
                   [&](const PlanFile& a, const PlanFile& b) { return seconds(a) > seconds(b); });
}

// The files (and single tests) a run covers, kept in its manifest so --resume covers the same.
void record_files(nlohmann::json& manifest, const std::vector<PlanFile>& files) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json entry = {{"relpath", f.relpath}};
    if (f.only) entry["tests"] = *f.only;
    if (f.bases) entry["bases"] = *f.bases;
    list.push_back(entry);
  }
  manifest["files"] = list;
}

std::vector<PlanFile> files_of_manifest(const nlohmann::json& plan,
                                        const nlohmann::json& manifest) {
  std::map<std::string, nlohmann::json> wanted;
  for (const auto& f : manifest.value("files", nlohmann::json::array()))
    wanted[f.value("relpath", "")] = f;
  std::vector<PlanFile> out;
  for (auto f : plan_files(plan, std::nullopt)) {
    auto it = wanted.find(f.relpath);
    if (it == wanted.end()) continue;
    if (it->second.contains("tests")) f.only = it->second["tests"].get<std::vector<std::string>>();
    if (it->second.contains("bases")) f.bases = it->second["bases"].get<std::vector<std::string>>();
    out.push_back(std::move(f));
  }
  return out;
}

// The files Spyre's label filter keeps; the ones without any label are named on stderr (when
// `warn`), since no label selects them.
std::vector<PlanFile> only_labelled(const nlohmann::json& plan, const std::vector<PlanFile>& files,
                                    const std::vector<std::string>& labels, bool warn = true) {
  std::vector<std::string> unlabelled;
  std::vector<std::string> keep = files_with_labels(plan, labels, &unlabelled);
  if (warn)
    for (const auto& relpath : unlabelled)
      std::cerr << fmt::format("ootci run: {} has no labels, so --labels {} does not select it\n",
                               relpath, fmt::join(labels, ","));
  std::vector<PlanFile> out;
  for (const auto& f : files)
    if (std::find(keep.begin(), keep.end(), f.relpath) != keep.end()) out.push_back(f);
  return out;
}

// The resolved plan the run runs: the request's own, or the backend's test configs resolved.
nlohmann::json plan_to_run(const RunRequest& req, const DiscoveryRun* discovery) {
  PlanResult resolved;
  if (discovery)
    resolved.plan = discovery->plan;
  else
    resolved = resolve_plan(req.backend);
  if (!resolved.ok()) {
    std::string all;
    for (const auto& e : resolved.errors) all += e + "\n";
    throw Error(all + "the plan has errors; nothing ran");
  }
  return resolved.plan;
}

// One process runs a run. A --resume (or a continued discovery) of a run whose process still
// lives would run its tests a second time beside it, both writing its results; a run whose
// process was killed holds no lock, so it is continued.
FileLock lock_run(const BackendConfig& backend, const std::string& run_id) {
  std::string run_dir = run_folder(backend, run_id);
  fs::create_directories(run_dir);
  pid_t holder = 0;
  std::optional<FileLock> lock = FileLock::try_lock(run_dir + "/run.lock", &holder);
  if (!lock)
    throw Error(fmt::format(
        "run {} is still being run by another ootci process ({}): let it finish, or stop it "
        "(SIGINT) and run this again to continue it",
        run_id, holder > 0 ? fmt::format("pid {}", holder) : std::string("pid not known yet")));
  return std::move(*lock);
}

// What a run works on: a new run, or the one --resume continues.
struct RunStart {
  RunInfo info;
  std::vector<PlanFile> files;
  std::set<std::string> finished;  // the settled tests of a resumed run
  // A staged selection's second stage: decided after the first, and kept in the manifest so a
  // resumed run still decides it (or still covers it, once it ran). Null: none.
  nlohmann::json second_stage;
  std::vector<std::string> labels;
  int wave = 0;  // --wave: the one wave of a selection it runs
};

// The run --resume continues: its own files, labels and second stage. Finished means settled:
// failures still owed their reruns (run.reruns) run again, and whole-file errors are dropped so the
// file gets another chance.
RunStart resumed_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan,
                     const std::string& config_hash) {
  if (req.selection || req.shards > 0)
    throw Error("--resume continues the run's own files; leave out --select and --shard");
  auto prior = store.run(req.resume_run);
  if (!prior)
    throw Error(fmt::format("--resume: no run {} in {}", req.resume_run, req.evidence_path));
  if (prior->config_hash != config_hash)
    throw Error(fmt::format("--resume: run {} ran another plan (config hash {}, now {})",
                            req.resume_run, prior->config_hash, config_hash));
  RunStart run;
  run.info = *prior;
  run.files = files_of_manifest(plan, run.info.manifest);
  run.second_stage = run.info.manifest.value("second_stage", nlohmann::json());
  run.labels = run.info.manifest.value("labels", std::vector<std::string>{});
  run.wave = run.info.manifest.value("wave", 0);
  for (const auto& r : store.results(run.info.id)) {
    if (r.name.empty())
      store.forget(run.info.id, r.test_id);
    else if (!(rerunnable(r) && r.reruns == 0 && req.backend.run.reruns > 0))
      run.finished.insert(r.test_id);
  }
  return run;
}

// What `--wave W [--shard K/N]` runs of the selection: that wave, or shard K of it, as
// `ootci shards --select` assigns them from the same evidence (select/waves.h).
Selection wave_part(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan) {
  if (!req.selection) throw Error(fmt::format("--wave {} needs --select", req.wave));
  std::vector<std::string> relpaths;
  for (const auto& f : plan["files"]) relpaths.push_back(f["relpath"].get<std::string>());
  Selection part = wave_of(*req.selection, req.wave, relpaths);
  if (wave_empty(part))
    throw Error(fmt::format(
        "--wave {}: the selection's wave {} has no test of the plan to run{}", req.wave, req.wave,
        req.wave == 2 ? " (no \"then\" tests beyond wave 1's): there is nothing to run" : ""));
  if (req.shards == 0) return part;
  std::vector<Shard> shards = wave_shards(part, store.test_durations(), req.shards);
  if (static_cast<size_t>(req.shard) > shards.size())
    throw Error(fmt::format(
        "--shard {}/{}: wave {} has {} units (files or tests), so it splits into {} shards; run "
        "the shards `ootci shards --select` lists",
        req.shard, req.shards, req.wave, shards.size(), shards.size()));
  return shard_selection(part, shards[static_cast<size_t>(req.shard - 1)]);
}

// A new run of the request's selection, labels and shard.
RunStart new_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan,
                 const std::string& config_hash, nlohmann::json second_stage,
                 const DiscoveryRun* discovery) {
  RunStart run;
  RunInfo& info = run.info;
  info.id = req.run_id.empty() ? new_run_id(now_ms()) : req.run_id;
  // It names a folder under the workspace.
  bool safe =
      !info.id.empty() && info.id[0] != '.' &&
      std::all_of(info.id.begin(), info.id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (!safe)
    throw Error(fmt::format("--run-id {}: use letters, digits, '-', '_' and '.'", info.id));
  if (store.run(info.id))
    throw Error(fmt::format("--run-id: run {} already exists in {}", info.id, req.evidence_path));
  info.backend = req.backend.name;
  info.config_hash = config_hash;
  info.started_ms = now_ms();
  info.shard = req.shards > 0 ? fmt::format("{}/{}", req.shard, req.shards) : "";
  if (discovery && discovery->part.n > 0)
    info.shard = fmt::format("{}/{}", discovery->part.k, discovery->part.n);
  run.second_stage = std::move(second_stage);
  run.wave = req.wave;
  run.files = plan_files(plan, req.wave > 0 ? wave_part(req, store, plan) : req.selection);
  run.labels = req.labels.value_or(req.backend.run.labels);
  if (!run.labels.empty()) run.files = only_labelled(plan, run.files, run.labels);
  if (req.shards > 0 && req.wave == 0)
    run.files = shard_of(run.files, store, req.shard, req.shards);
  return run;
}

RunStart start_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan,
                   const DiscoveryRun* discovery) {
  std::string config_hash = plan_config_hash(plan);
  nlohmann::json second_stage;
  // One wave runs as told: whoever runs the waves decides wave 2 over all of wave 1's shards.
  if (req.selection && !req.selection->then_tests.empty() && req.wave == 0) {
    if (req.shards > 0)
      throw Error(
          "--select: a staged selection (\"then\") is sharded wave by wave: give --wave 1 with "
          "--shard, and --wave 2 once `ootci select wave2` says wave 1 raised; a shard alone "
          "cannot decide wave 2 for the others");
    second_stage = {{"tests", req.selection->then_tests}};
  }
  RunStart run = req.resume_run.empty()
                     ? new_run(req, store, plan, config_hash, second_stage, discovery)
                     : resumed_run(req, store, plan, config_hash);
  run.info.status = RunStatus::kRunning;
  return run;
}

// Writes the run's plan and manifest into `run_dir` and records the run as running.
void open_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan,
              RunStart& run, const std::string& run_dir, const std::string& plan_path,
              const DiscoveryRun* discovery) {
  fs::create_directories(run_dir);
  write_plan(plan, plan_path);
  RunInfo& info = run.info;
  info.manifest = build_manifest(req.backend, plan, plan_path, info);
  record_files(info.manifest, run.files);
  if (!run.labels.empty()) info.manifest["labels"] = run.labels;
  info.manifest["isolation"] = run_isolation(req.backend);
  if (!run.second_stage.is_null()) info.manifest["second_stage"] = run.second_stage;
  if (run.wave > 0) info.manifest["wave"] = run.wave;
  if (discovery) info.manifest["discovery_pass"] = discovery_pass_name(discovery->pass);
  if (req.resume_run.empty())
    store.begin_run(info);
  else
    store.finish_run(info.id, 0, RunStatus::kRunning, std::nullopt, info.manifest);
  order_longest_first(run.files, store.file_durations());
}

// The environment of every test process: the plan's, the labels, the variant part (its placement
// written into `run_dir`), and op recording.
std::map<std::string, std::string> run_environment(const RunRequest& req,
                                                   const std::string& run_dir,
                                                   const std::string& plan_path,
                                                   const std::vector<std::string>& labels,
                                                   const DiscoveryRun* discovery) {
  auto env =
      plan_environment(req.backend, plan_path, ootci_python_dir(), process_env("PYTHONPATH"));
  if (!labels.empty()) env["OOTCI_LABELS"] = fmt::format("{}", fmt::join(labels, ","));
  const VariantPart none;
  const VariantPart& part = discovery ? discovery->part : none;
  if (part.n > 0) {
    env["OOTCI_RUN_PART"] = fmt::format("{}/{}", part.k, part.n);
    std::string placed;
    for (const auto& [id, k] : part.placed) placed += fmt::format("{}\t{}\n", id, k);
    env["OOTCI_RUN_PART_PLACED"] = run_dir + "/part_placed.txt";
    write_file_atomically(env["OOTCI_RUN_PART_PLACED"], placed);
    if (!part.placed_among_workers.empty()) {
      std::string shares;
      for (const auto& [id, worker] : part.placed_among_workers)
        shares += fmt::format("{}\t{}\n", id, worker);
      env["OOTCI_RUN_SUBPART_PLACED"] = run_dir + "/subpart_placed.txt";
      write_file_atomically(env["OOTCI_RUN_SUBPART_PLACED"], shares);
    }
  }
  if (discovery && discovery->record_ops) {
    env["OOTCI_RECORD_OPS"] = "1";
    env["OOTCI_DEVICE_TYPE"] = req.backend.device_type;
  }
  return env;
}

// A staged selection's second stage, once the first is through: decided from the first stage's
// results against the baseline, recorded in the manifest, and run when called for. Returns
// whether a stop cut it short.
bool run_second_stage(FileWorkers& workers, Progress& progress, EvidenceStore& store,
                      const nlohmann::json& plan, RunStart& run) {
  RunInfo& info = run.info;
  std::optional<std::string> why =
      second_stage_reason(store.results(info.id), baseline_of(store, info).results_or_null());
  auto& stage = info.manifest["second_stage"];
  stage["ran"] = why.has_value();
  stage["why"] = why ? *why : kSecondStageNotCalledFor;
  std::vector<PlanFile> more;
  if (why) {
    Selection then;
    then.tests = stage["tests"].get<std::set<std::string>>();
    more = plan_files(plan, then);
    // The first stage already named the unlabelled files.
    if (!run.labels.empty()) more = only_labelled(plan, more, run.labels, /*warn=*/false);
    // One manifest entry per file, so --resume covers both stages.
    for (const auto& m : more) {
      auto same = std::find_if(run.files.begin(), run.files.end(),
                               [&](const PlanFile& f) { return f.relpath == m.relpath; });
      if (same == run.files.end())
        run.files.push_back(m);
      else if (same->only && m.only)
        same->only->insert(same->only->end(), m.only->begin(), m.only->end());
    }
    record_files(info.manifest, run.files);
    std::cerr << fmt::format("ootci run: second stage, {} tests in {} files: {}\n",
                             stage["tests"].size(), more.size(), *why);
  }
  store.finish_run(info.id, 0, RunStatus::kRunning, std::nullopt, info.manifest);
  if (more.empty()) return false;
  workers.run(more, progress);
  return workers.stopped_early();
}

// The run's end: its status and verdict in the store, and its manifest, junit.xml and report
// page in `run_dir`.
RunReport close_run(const RunRequest& req, EvidenceStore& store, RunInfo& info, bool stopped,
                    const std::string& run_dir, const std::map<std::string, std::string>& env) {
  RunReport report;
  report.run_id = info.id;
  report.results = store.results(info.id);
  report.status = stopped ? RunStatus::kInterrupted : RunStatus::kFinished;
  // A verdict on part of a run would mislead; an interrupted run gets one when resumed.
  if (!stopped)
    report.verdict = judge(report.results, baseline_of(store, info).results_or_null()).conclusion;
  info.ended_ms = now_ms();
  finalize_manifest(info.manifest, info.ended_ms);
  store.finish_run(info.id, info.ended_ms, report.status, report.verdict, info.manifest);
  report.manifest_path = run_dir + "/manifest.json";
  write_json_file(report.manifest_path, info.manifest);
  report.junit_path = run_dir + "/junit.xml";
  write_junit(report.junit_path, report.results);
  ReportPage page = gather_report_page(store, *store.run(info.id), report.results, run_dir);
  page.reproduce_env = env;
  page.reproduce_dir = run_dir;
  page.python = python_command(req.backend, ootci_python_dir());
  report.html_path = run_dir + "/report.html";
  write_file_atomically(report.html_path, render_report_page(page));
  return report;
}

}  // namespace

const char* discovery_pass_name(DiscoveryPass pass) {
  switch (pass) {
    case DiscoveryPass::kPlain:
      return "plain";
    case DiscoveryPass::kRecording:
      return "recording";
    case DiscoveryPass::kInputProbe:
      return "input_probe";
  }
  return "";
}

int run_workers(const RunRequest& req) {
  int workers = std::max(1, req.workers > 0 ? req.workers : req.backend.run.workers);
  int devices = req.backend.run.devices;
  if (devices > 0) workers = std::min(workers, devices);  // a worker owns at least one device
  return workers;
}

RunReport run_plan(const RunRequest& req, EvidenceStore& store, const DiscoveryRun* discovery) {
  nlohmann::json plan = plan_to_run(req, discovery);
  // Held before a resumed run's results are touched, and until the run is closed.
  std::optional<FileLock> lock;
  if (!req.resume_run.empty() && store.run(req.resume_run))
    lock.emplace(lock_run(req.backend, req.resume_run));
  RunStart run = start_run(req, store, plan, discovery);
  if (!lock) lock.emplace(lock_run(req.backend, run.info.id));
  std::string run_dir = run_folder(req.backend, run.info.id);
  std::string plan_path = run_dir + "/plan.json";
  open_run(req, store, plan, run, run_dir, plan_path, discovery);
  auto env = run_environment(req, run_dir, plan_path, run.labels, discovery);

  Progress progress(req.tty, store.test_durations(), run_workers(req));
  for (const auto& f : run.files) progress.expect_from_history(f.relpath);
  if (!run.finished.empty()) {
    std::vector<TestResult> settled;
    for (const auto& r : store.results(run.info.id))
      if (run.finished.count(r.test_id)) settled.push_back(r);
    progress.add_finished(settled);
  }
  FileWorkers workers(
      req, store, run.info.id, run_dir, env, run.finished,
      TestLimits(req.backend.run, store.completed_durations(), discovery != nullptr));
  progress.start();
  // Discovery runs every variant of large files: its workers share them.
  workers.run(discovery ? shared_among_workers(run.files, run_workers(req)) : run.files, progress);
  progress.stop();

  // A stop signal that arrives after the last test is too late to have cut anything short.
  bool stopped = workers.stopped_early();
  if (!stopped && !run.second_stage.is_null() && !run.second_stage.contains("ran"))
    stopped = run_second_stage(workers, progress, store, plan, run);
  return close_run(req, store, run.info, stopped, run_dir, env);
}

RunReport run_plan(const RunRequest& req) {
  return run_plan(req, *EvidenceStore::open(req.evidence_path));
}

}  // namespace ootci
