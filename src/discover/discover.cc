#include "discover/discover.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "base/sha256.h"
#include "base/text.h"
#include "base/time.h"
#include "evidence/evidence_path.h"
#include "plan/path_glob.h"
#include "plan/plan_json.h"
#include "plan/plan_resolve.h"
#include "run/run_manifest.h"

namespace fs = std::filesystem;

namespace ootci {

std::vector<DiscoveryCandidate> discovery_candidates(const BackendConfig& backend,
                                                     const std::vector<std::string>& globs) {
  std::map<std::string, DiscoveryCandidate> by_path;
  if (globs.empty()) {
    PlanResult resolved = resolve_plan(backend);
    if (!resolved.ok()) {
      std::string all;
      for (const auto& e : resolved.errors) all += e + "\n";
      throw Error(all + "the plan has errors; give --files or fix the configs");
    }
    for (const auto& f : resolved.plan["files"]) {
      std::string path = f["path"];
      by_path[path] = {path, f["relpath"], f["sha256"]};
    }
  }
  for (const auto& glob : globs) {
    std::string pattern = fs::path(glob).is_absolute() ? glob : backend.torch_root + "/" + glob;
    size_t matched = 0;
    for (const auto& p : expand_glob(pattern)) {
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) continue;
      fs::path canonical = fs::canonical(p, ec);
      std::string path = ec ? p : canonical.string();
      ++matched;
      if (by_path.count(path)) continue;
      by_path[path] = {path, plan_relpath(path, backend.torch_root, backend.device_root),
                       file_sha256_hex(path)};
    }
    if (matched == 0) throw Error(fmt::format("--files {}: no file matches {}", glob, pattern));
  }
  std::vector<DiscoveryCandidate> out;
  for (auto& [path, c] : by_path) out.push_back(std::move(c));
  return out;
}

StaleSplit split_stale(EvidenceStore& store, const std::vector<DiscoveryCandidate>& candidates,
                       const std::string& backend_rev, const std::string& shard, bool force) {
  StaleSplit split;
  for (const auto& c : candidates) {
    std::optional<DiscoveredFile> known =
        force ? std::nullopt : store.discovered(c.relpath, c.sha256, backend_rev);
    std::optional<RunInfo> by = known ? store.run(known->run_id) : std::nullopt;
    if (by && by->shard == shard)
      split.up_to_date.push_back(*known);
    else
      split.to_run.push_back(c);
  }
  return split;
}

nlohmann::json discovery_plan(const BackendConfig& backend,
                              const std::vector<DiscoveryCandidate>& files) {
  std::vector<DiscoveryCandidate> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : sorted) {
    list.push_back({
        {"path", f.path},
        {"relpath", f.relpath},
        {"sha256", f.sha256},
        {"declared_as", {f.path}},
        {"configs", nlohmann::json::array()},
        {"labels", nlohmann::json::array()},
        {"unlisted_test_mode", "mandatory_success"},
        {"supported_dtypes", nullptr},
        {"supported_ops", nullptr},
        {"rules", nlohmann::json::array()},
        {"extra", nlohmann::json::object()},
    });
  }
  return {
      {"schema", kPlanSchema},
      {"version", kPlanVersion},
      {"backend",
       {{"name", backend.name},
        {"device_type", backend.device_type},
        {"python", backend.python},
        {"modules", backend.modules},
        {"pythonpath", backend.pythonpath},
        {"env", backend.env}}},
      {"upstream", {{"torch_root", backend.torch_root}, {"device_root", backend.device_root}}},
      {"configs", nlohmann::json::array()},
      {"files", list},
  };
}

std::vector<DiscoverySummary> summarize_discovery(
    const std::vector<DiscoveryCandidate>& files, const std::vector<TestResult>& results,
    const std::map<std::string, std::vector<std::string>>& ops_by_test) {
  std::map<std::string, DiscoverySummary> by_file;
  std::map<std::string, std::set<std::string>> ops_by_file;
  for (const auto& f : files) by_file[f.relpath].relpath = f.relpath;
  for (const auto& r : results) {
    auto it = by_file.find(r.file);
    if (it == by_file.end()) continue;
    if (r.name.empty()) {
      it->second.file_errors.push_back(fmt::format("{}: {}", r.error_class, first_line(r.message)));
      continue;
    }
    ++it->second.variants;
    ++it->second.outcomes[r.outcome];
    auto ops = ops_by_test.find(r.test_id);
    if (ops != ops_by_test.end())
      ops_by_file[r.file].insert(ops->second.begin(), ops->second.end());
  }
  std::vector<DiscoverySummary> out;
  for (auto& [relpath, s] : by_file) {
    s.distinct_ops = ops_by_file[relpath].size();
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// The run of one of discovery's passes, as `ootci discover` was asked.
RunRequest pass_request(const DiscoverRequest& req) {
  RunRequest pass;
  pass.backend = req.backend;
  pass.evidence_path = req.evidence_path;
  pass.stop = req.stop;
  pass.workers = req.workers;
  pass.tty = req.tty;
  return pass;
}

}  // namespace

InputProbeReport probe_inputs(const DiscoverRequest& req, EvidenceStore& store,
                              const std::vector<DiscoveryCandidate>& files,
                              const std::map<std::string, std::string>& run_of_file) {
  InputProbeReport report;
  // test id -> its discovery run, for the tests still to probe
  std::map<std::string, std::string> pending;
  std::set<std::string> runs;
  for (const auto& [file, run] : run_of_file) runs.insert(run);
  for (const auto& run : runs) {
    auto inputs = store.input_op_dtypes_of_run(run);
    auto probed = store.input_probes_of_run(run);
    for (const auto& r : store.results(run)) {
      auto file = run_of_file.find(r.file);
      if (file == run_of_file.end() || file->second != run || r.outcome != Outcome::kPassed)
        continue;
      if (inputs.count(r.test_id) && !probed.count(r.test_id)) pending[r.test_id] = run;
    }
  }
  report.tests = pending.size();
  if (pending.empty()) return report;

  std::map<std::string, std::map<std::string, std::string>> found;  // run -> test -> probe
  int passes = std::min(req.probe_inputs, kMaxInputProbes);
  for (int k = 0; k < passes && !pending.empty(); ++k) {
    double shift = kInputProbeShifts[k];
    RunRequest pass = pass_request(req);
    pass.backend.env["OOTCI_PROBE_INPUTS"] = fmt::format("{}", shift);
    pass.backend.run.reruns = 0;  // a test one shift fails is settled
    DiscoveryRun probe;
    probe.pass = DiscoveryPass::kInputProbe;
    std::vector<DiscoveryCandidate> left;
    for (const auto& f : files) {
      std::string prefix = f.relpath + "::";
      auto it = pending.lower_bound(prefix);
      if (it != pending.end() && it->first.rfind(prefix, 0) == 0) left.push_back(f);
    }
    probe.plan = discovery_plan(pass.backend, left);
    pass.selection = Selection{};
    for (const auto& [test, run] : pending) pass.selection->tests.insert(test);
    RunReport ran = run_plan(pass, store, &probe);
    ++report.passes;
    for (const auto& r : ran.results) {
      auto it = pending.find(r.test_id);
      if (it == pending.end() || !is_failure(r.outcome)) continue;
      found[it->second][r.test_id] =
          fmt::format("{}{}: {}", kInputProbeFailed, shift, error_or_outcome(r));
      ++report.failed;
      pending.erase(it);
    }
    store.delete_run(ran.run_id);
    std::error_code ignored;
    std::filesystem::remove_all(run_folder(req.backend, ran.run_id), ignored);
    if (ran.status != RunStatus::kFinished) {
      report.interrupted = true;  // the tests left stay unprobed
      pending.clear();
    }
  }
  for (const auto& [test, run] : pending)
    found[run][test] = fmt::format("held: {} shifts of its inputs", passes);
  for (const auto& [run, probes] : found) store.set_input_probes(run, probes);
  return report;
}

Selection recording_selection(const std::vector<TestResult>& plain) {
  std::map<std::string, std::vector<std::string>> ended;  // relpath -> its variants that ended
  std::set<std::string> cut;                              // files with a crash or a hang
  for (const TestResult& r : plain) {
    if (r.name.empty()) continue;  // a whole-file error: the file has no variant to record
    Seen seen = classify(r);
    if (seen == Seen::kCrash || seen == Seen::kHang)
      cut.insert(r.file);
    else
      ended[r.file].push_back(r.test_id);
  }
  Selection sel;
  for (auto& [relpath, ids] : ended) {
    if (!cut.count(relpath))
      sel.files.insert(relpath);
    else
      sel.tests.insert(ids.begin(), ids.end());
  }
  return sel;
}

namespace {

// The newest run of this pass of this discovery started after `after_ms`, whatever its status (a
// stop leaves it interrupted, a kill running). Its plan must be this one byte for byte (the files
// and their content, the backend's environment and modules), and its shard and backend revision
// the same.
std::optional<RunInfo> earlier_pass(EvidenceStore& store, const std::string& backend,
                                    const DiscoveryRun& pass, const std::string& backend_rev,
                                    int64_t after_ms) {
  std::string plan_sha256 = sha256_hex(plan_text(pass.plan));
  std::string shard = pass.part.n > 0 ? fmt::format("{}/{}", pass.part.k, pass.part.n) : "";
  for (const RunInfo& r : store.runs(backend)) {
    if (r.started_ms <= after_ms) break;  // newest first
    if (r.manifest.value("plan_sha256", "") == plan_sha256 && r.shard == shard &&
        r.manifest.value("discovery_pass", "") == discovery_pass_name(pass.pass) &&
        r.manifest.value("backend_revision", "") == backend_rev)
      return r;
  }
  return std::nullopt;
}

// Runs a pass of the discovery, or continues it when an earlier attempt did not finish (a stop, a
// kill, a machine lost): on a device whose crashes cost seconds each, a file's pass takes hours,
// and starting it again would cost them all again. A pass that finished is taken as it is.
std::optional<RunReport> continue_pass(EvidenceStore& store, RunRequest pass,
                                       const DiscoveryRun& discovery,
                                       const std::optional<RunInfo>& before,
                                       std::vector<ContinuedPass>* continued) {
  if (before && before->status == RunStatus::kFinished) {
    RunReport done;
    done.run_id = before->id;
    done.status = before->status;
    done.verdict = before->verdict;
    done.results = store.results(before->id);
    continued->push_back(
        {discovery_pass_name(discovery.pass), before->id, before->status, done.results.size()});
    return done;
  }
  if (before) {
    size_t settled = store.finished_tests(before->id).size();
    continued->push_back(
        {discovery_pass_name(discovery.pass), before->id, before->status, settled});
    // Said now, not only in the summary: the pass may take hours from here.
    std::cerr << fmt::format(
        "ootci discover: continuing the {} pass of run {} ({}; {} variants settled)\n",
        discovery_pass_name(discovery.pass), before->id, to_string(before->status), settled);
    pass.resume_run = before->id;
    pass.selection.reset();  // the run's manifest keeps what it covers
  }
  return run_plan(pass, store, &discovery);
}

// --timings: every result's duration in that evidence, not only those that ran to an end: a
// variant that hung costs its limit again, and left to the hash, two 2-minute hangs on one worker
// were half its share. None without --shard or --timings; an evidence database without durations
// still places the variants (by their ids alone).
std::optional<std::map<std::string, double>> timings_of(const DiscoverRequest& req) {
  if (req.part.n == 0 || req.timings.empty()) return std::nullopt;
  if (!fs::is_regular_file(req.timings))
    throw Error(fmt::format("--timings {}: no such evidence database", req.timings));
  return EvidenceStore::open(req.timings)->test_durations();
}

// The recording pass's ops, op dtypes and input dtypes, moved onto the plain pass's results;
// the recording run is then deleted with its folder.
void move_recorded_ops(EvidenceStore& store, const RunReport& plain, const std::string& ops_run,
                       const BackendConfig& backend) {
  std::map<std::string, std::vector<std::string>> ops = store.ops_of_run(ops_run);
  std::map<std::string, std::vector<std::string>> op_dtypes = store.op_dtypes_of_run(ops_run);
  std::map<std::string, std::vector<std::string>> input_op_dtypes =
      store.input_op_dtypes_of_run(ops_run);
  std::vector<TestResult> with_ops;
  for (TestResult r : plain.results) {
    auto it = ops.find(r.test_id);
    if (it == ops.end()) continue;
    r.ops = it->second;
    if (auto d = op_dtypes.find(r.test_id); d != op_dtypes.end()) r.op_dtypes = d->second;
    if (auto d = input_op_dtypes.find(r.test_id); d != input_op_dtypes.end())
      r.input_op_dtypes = d->second;
    with_ops.push_back(std::move(r));
  }
  store.record_batch(plain.run_id, with_ops);
  store.delete_run(ops_run);
  std::error_code ignored;
  std::filesystem::remove_all(run_folder(backend, ops_run), ignored);
}

// The recording pass of `plain`'s discovery. It runs no variant that crashed or hung in the plain
// pass (`selection`): placed among the workers with them, the worker that had a 2-minute hang
// ended its share 2 minutes early.
DiscoveryRun recording_discovery(const DiscoveryRun& plain, const Selection& selection,
                                 const std::map<std::string, double>& durations, int workers) {
  DiscoveryRun recording = plain;
  recording.pass = DiscoveryPass::kRecording;
  recording.record_ops = true;
  if (!plain.part.placed_among_workers.empty()) {
    std::map<std::string, int> runs_again;
    for (const auto& placed : plain.part.placed)
      if (selection.files.count(unit_file(placed.first)) || selection.tests.count(placed.first))
        runs_again.insert(placed);
    recording.part.placed_among_workers =
        place_among_workers(runs_again, durations, plain.part.k, workers);
  }
  return recording;
}

}  // namespace

DiscoverReport discover(const DiscoverRequest& req) {
  DiscoverReport report;
  std::vector<DiscoveryCandidate> candidates = discovery_candidates(req.backend, req.file_globs);
  if (candidates.empty()) throw Error("discover: no test files (the plan lists none; use --files)");
  report.backend_rev = backend_revision(req.backend);
  // Opened once: every pass records into it, and reads what the one before left.
  auto store = EvidenceStore::open(req.evidence_path);
  std::string shard = req.part.n > 0 ? fmt::format("{}/{}", req.part.k, req.part.n) : "";
  StaleSplit split = split_stale(*store, candidates, report.backend_rev, shard, req.force);
  report.up_to_date = split.up_to_date;
  // Files up to date are probed too when asked: a probe can be added to existing evidence.
  auto probe = [&](const std::map<std::string, std::string>& run_of_file) {
    if (req.probe_inputs > 0) report.probe = probe_inputs(req, *store, candidates, run_of_file);
  };
  std::map<std::string, std::string> run_of_file;
  for (const auto& f : split.up_to_date) run_of_file[f.relpath] = f.run_id;
  if (split.to_run.empty()) {
    probe(run_of_file);
    return report;
  }

  // Two passes. The plain one gives the outcomes: a dispatch mode changes how some kernels run
  // (on the reference backend it stops a conj crash in _copy_from), so outcomes seen under the
  // recorder would promise passes a real run does not keep. The recording pass only gives ops.
  RunRequest plain = pass_request(req);
  DiscoveryRun plain_pass;
  plain_pass.pass = DiscoveryPass::kPlain;
  plain_pass.plan = discovery_plan(req.backend, split.to_run);
  plain_pass.part = req.part;
  std::map<std::string, double> durations;  // from --timings
  if (auto timings = timings_of(req)) {
    durations = std::move(*timings);
    std::vector<std::string> relpaths;
    for (const auto& f : split.to_run) relpaths.push_back(f.relpath);
    plain_pass.part.placed = place_variants(relpaths, durations, req.part.n);
    plain_pass.part.placed_among_workers =
        place_among_workers(plain_pass.part.placed, durations, req.part.k, run_workers(plain));
  }
  std::optional<RunInfo> plain_before =
      req.force ? std::nullopt
                : earlier_pass(*store, req.backend.name, plain_pass, report.backend_rev, 0);
  report.run = continue_pass(*store, plain, plain_pass, plain_before, &report.continued);
  if (report.run->status != RunStatus::kFinished)
    return report;  // interrupted: nothing is discovered

  RunRequest recording = plain;
  recording.resume_run.clear();
  recording.backend.run.reruns = 0;  // failures are the plain pass's business
  recording.selection = recording_selection(report.run->results);
  DiscoveryRun recording_pass =
      recording_discovery(plain_pass, *recording.selection, durations, run_workers(recording));
  std::optional<RunInfo> recording_before;
  if (plain_before)  // only a pass that followed this plain pass belongs to it
    recording_before = earlier_pass(*store, req.backend.name, recording_pass, report.backend_rev,
                                    plain_before->started_ms);
  RunReport ops_run =
      *continue_pass(*store, recording, recording_pass, recording_before, &report.continued);
  // Stopped: its run stays as it is, so the next discover continues it where it stopped.
  if (ops_run.status != RunStatus::kFinished) {
    report.stopped_recording = ops_run.run_id;
    return report;
  }

  move_recorded_ops(*store, *report.run, ops_run.run_id, req.backend);

  report.files =
      summarize_discovery(split.to_run, report.run->results, store->ops_of_run(report.run->run_id));
  int64_t now = now_ms();
  for (const auto& f : split.to_run) {
    store->mark_discovered({f.relpath, f.sha256, report.backend_rev, report.run->run_id, now});
    run_of_file[f.relpath] = report.run->run_id;
  }
  probe(run_of_file);
  return report;
}

}  // namespace ootci
