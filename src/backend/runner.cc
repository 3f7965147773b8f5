#include "backend/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "backend/evidence_path.h"
#include "backend/judge.h"
#include "backend/plan_env.h"
#include "backend/plan_resolve.h"
#include "backend/progress.h"
#include "backend/pytest_process.h"
#include "backend/run_manifest.h"
#include "backend/run_outputs.h"
#include "backend/shards.h"
#include "base/error.h"
#include "base/time.h"

namespace fs = std::filesystem;

namespace ootci {

std::atomic<bool> g_run_stop{false};

Selection load_selection(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open selection", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(
        fmt::format("{}: a selection is a JSON object with \"files\" and/or \"tests\"", path));
  Selection s;
  for (const char* key : {"files", "tests"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array())
      throw Error(fmt::format("{}: \"{}\" must be a list of strings", path, key));
    for (const auto& v : j[key]) {
      if (!v.is_string())
        throw Error(fmt::format("{}: \"{}\" must be a list of strings", path, key));
      (std::string(key) == "files" ? s.files : s.tests).insert(v.get<std::string>());
    }
  }
  return s;
}

namespace {

struct PlanFile {
  std::string path;                              // absolute
  std::string relpath;                           // test ids start with it
  std::optional<std::vector<std::string>> only;  // from a selection of single tests
};

bool is_crash_or_timeout(const TestResult& r) {
  return r.error_class == "Timeout" || r.error_class.rfind("SIG", 0) == 0;
}

bool failing(const TestResult& r) {
  return r.outcome == "failed" || r.outcome == "error";
}

// Runs the plan's files on worker threads; every result goes to the store as it finishes.
class Runner {
 public:
  Runner(const RunRequest& req, EvidenceStore& store, std::string run_id, std::string run_dir,
         std::map<std::string, std::string> env, std::set<std::string> finished)
      : req_(req),
        store_(store),
        run_id_(std::move(run_id)),
        run_dir_(std::move(run_dir)),
        env_(std::move(env)),
        finished_(std::move(finished)) {}

  void run(std::vector<PlanFile> files, Progress& progress) {
    progress_ = &progress;
    std::mutex queue_mutex;
    size_t next = 0;
    int workers = req_.workers > 0 ? req_.workers : req_.backend.run.workers;
    std::vector<std::thread> threads;
    for (int w = 0; w < std::max(1, workers); ++w) {
      threads.emplace_back([&] {
        for (;;) {
          size_t i;
          {
            std::lock_guard<std::mutex> lock(queue_mutex);
            if (next >= files.size() || g_run_stop) return;
            i = next++;
          }
          run_file(files[i]);
        }
      });
    }
    for (auto& t : threads) t.join();
  }

 private:
  void record(TestResult r) {
    r.device = req_.backend.device_type;
    if (!r.finished_ms) r.finished_ms = now_ms();
    std::lock_guard<std::mutex> lock(store_mutex_);
    store_.record(run_id_, r);
    progress_->add(r);
  }

  PytestOutcome attempt(const PlanFile& f, std::optional<std::vector<std::string>> only,
                        const std::set<std::string>& skip,
                        const std::function<void(const TestResult&)>& on_result) {
    PytestRequest p;
    p.command = {req_.backend.python, "-m", "pytest",     f.path, "-p",
                 "no:cacheprovider",  "-q", "--color=no", "-p",   "ootci_torch.run_reporter"};
    p.command.insert(p.command.end(), req_.backend.run.pytest_args.begin(),
                     req_.backend.run.pytest_args.end());
    p.env = env_;
    p.cwd = run_dir_;
    p.work_dir = fmt::format("{}/work/{}", run_dir_, attempt_counter_++);
    p.only = std::move(only);
    p.skip = skip;
    p.stall_timeout_s = req_.backend.run.stall_timeout_s;
    p.test_timeout_s = req_.backend.run.test_timeout_s;
    return run_pytest(p, on_result, g_run_stop);
  }

  std::string log_tail(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  TestResult error_result(const std::string& id, const std::string& error_class,
                          const std::string& message) {
    TestResult r;
    split_test_id(id, r);
    r.outcome = "error";
    r.error_class = error_class;
    r.message = message;
    return r;
  }

  // The test that was running when its process died from a signal, run again alone: a crash that
  // repeats is the test's own; one that does not came from the tests before it.
  void confirm_crash(const PlanFile& f, const std::string& id, int sig) {
    std::optional<TestResult> alone;
    PytestOutcome again =
        attempt(f, std::vector<std::string>{id}, {}, [&](const TestResult& r) { alone = r; });
    if (again.ending == PytestEnding::interrupted) return;
    if (alone) {
      alone->message =
          fmt::format("{} crashed the process ({}) after other tests, but not when run alone. {}",
                      id, signal_name(sig), alone->message);
      record(*alone);
      return;
    }
    int alone_sig = again.ending == PytestEnding::signaled ? again.signal : sig;
    record(error_result(id, signal_name(alone_sig),
                        fmt::format("the test process died from {} while this test ran (also when "
                                    "run alone)\n{}",
                                    signal_name(alone_sig), log_tail(again.log_path))));
  }

  void run_file(const PlanFile& f) {
    std::set<std::string> done = finished_;
    std::vector<std::string> all;  // every test of the file this run is responsible for
    std::optional<std::vector<std::string>> only = f.only;
    std::vector<TestResult> results;
    bool stall_retried = false;
    auto keep = [&](const TestResult& r) {
      results.push_back(r);
      record(r);
    };
    for (;;) {
      PytestOutcome out = attempt(f, only, done, keep);
      if (out.collected && all.empty()) {
        all = *out.collected;
        progress_->expect(f.relpath, all.size());
      }
      for (const auto& r : out.results) done.insert(r.test_id);
      if (out.ending == PytestEnding::interrupted) return;
      bool exited = out.ending == PytestEnding::exited;
      if (exited && !out.in_progress && out.exit_code <= 1) break;  // every test reported
      if (exited && !out.in_progress && out.results.empty()) {
        // Nothing ran: an import or collection error (pytest exits 2), or no tests (5).
        if (out.exit_code != 5)
          keep(error_result(f.relpath, "CollectionError",
                            fmt::format("pytest exited {} before running a test\n{}", out.exit_code,
                                        out.collect_errors.empty() ? log_tail(out.log_path)
                                                                   : out.collect_errors.front())));
        break;
      }
      if (out.ending == PytestEnding::stalled && !stall_retried && !out.in_progress) {
        stall_retried = true;  // a stall outside any test: retry the rest once
      } else if (out.in_progress) {
        std::string id = *out.in_progress;
        done.insert(id);
        if (out.ending == PytestEnding::signaled) {
          confirm_crash(f, id, out.signal);
        } else if (out.ending == PytestEnding::stalled && !stall_retried) {
          stall_retried = true;  // retried once with the rest below
          done.erase(id);
        } else if (exited) {
          keep(error_result(id, "ProcessExit",
                            fmt::format("the test process exited with status {} during this "
                                        "test\n{}",
                                        out.exit_code, log_tail(out.log_path))));
        } else {
          std::string why = out.ending == PytestEnding::test_timeout
                                ? fmt::format("ran longer than test_timeout_s={}",
                                              req_.backend.run.test_timeout_s)
                                : fmt::format("no output for stall_timeout_s={} (after a retry)",
                                              req_.backend.run.stall_timeout_s);
          keep(error_result(id, "Timeout", why));
        }
      } else if (all.empty()) {
        // Died before it could say which tests it had: the whole file is one error.
        std::string cls = out.ending == PytestEnding::signaled ? signal_name(out.signal)
                          : exited                             ? "CollectionError"
                                                               : "Timeout";
        keep(error_result(f.relpath, cls, log_tail(out.log_path)));
        break;
      } else {
        // Died between tests (module setup or teardown): finish the rest one process per
        // test, so whatever kills the process takes only its own test with it.
        run_one_by_one(f, all, done, keep);
        break;
      }
      std::vector<std::string> rest;
      for (const auto& id : all)
        if (!done.count(id)) rest.push_back(id);
      if (rest.empty() && !all.empty()) break;
      only = all.empty() ? f.only : std::optional<std::vector<std::string>>(rest);
    }
    rerun_failures(f, results);
  }

  void run_one_by_one(const PlanFile& f, const std::vector<std::string>& all,
                      std::set<std::string>& done,
                      const std::function<void(const TestResult&)>& keep) {
    for (const auto& id : all) {
      if (done.count(id) || g_run_stop) continue;
      PytestOutcome one = attempt(f, std::vector<std::string>{id}, {}, keep);
      done.insert(id);
      if (!one.results.empty() || one.ending == PytestEnding::interrupted) continue;
      std::string cls = one.ending == PytestEnding::signaled ? signal_name(one.signal)
                        : one.ending == PytestEnding::exited ? "CollectionError"
                                                             : "Timeout";
      keep(error_result(id, cls, log_tail(one.log_path)));
    }
  }

  // Failed tests run again in fresh processes; one that passes is flaky, not a failure.
  void rerun_failures(const PlanFile& f, const std::vector<TestResult>& results) {
    std::map<std::string, TestResult> still;  // latest result of each failing test
    for (const auto& r : results)
      if (failing(r) && !is_crash_or_timeout(r) && r.name != "") still[r.test_id] = r;
    for (int round = 1; round <= req_.backend.run.reruns && !still.empty(); ++round) {
      if (g_run_stop) return;
      std::vector<std::string> ids;
      for (const auto& [id, r] : still) ids.push_back(id);
      attempt(f, ids, {}, [&](const TestResult& again) {
        auto it = still.find(again.test_id);
        if (it == still.end()) return;
        TestResult r = again;
        r.reruns = round;
        if (failing(r)) {
          it->second = r;
        } else {
          r.flaky = true;
          still.erase(it);
        }
        record(r);
      });
    }
  }

  const RunRequest& req_;
  EvidenceStore& store_;
  std::string run_id_;
  std::string run_dir_;
  std::map<std::string, std::string> env_;
  std::set<std::string> finished_;
  std::mutex store_mutex_;
  std::atomic<int> attempt_counter_{0};
  Progress* progress_ = nullptr;
};

std::vector<PlanFile> plan_files(const nlohmann::json& plan, const std::optional<Selection>& sel) {
  std::vector<PlanFile> out;
  for (const auto& f : plan["files"]) {
    PlanFile pf{f["path"].get<std::string>(), f["relpath"].get<std::string>(), std::nullopt};
    if (sel && !sel->empty() && !sel->files.count(pf.relpath)) {
      std::vector<std::string> tests;
      for (const auto& id : sel->tests)
        if (id.rfind(pf.relpath + "::", 0) == 0) tests.push_back(id);
      if (tests.empty()) continue;
      pf.only = tests;
    }
    out.push_back(std::move(pf));
  }
  return out;
}

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

std::string run_verdict(EvidenceStore& store, const RunInfo& info,
                        const std::vector<TestResult>& results) {
  auto green = store.last_green_run(info.backend, info.config_hash);
  std::vector<TestResult> before;
  if (green) before = store.results(green->id);
  return judge(results, green ? &before : nullptr).conclusion;
}

}  // namespace

RunReport run_plan(const RunRequest& req) {
  const BackendConfig& backend = req.backend;
  PlanResult resolved = resolve_plan(backend);
  if (!resolved.ok()) {
    std::string all;
    for (const auto& e : resolved.errors) all += e + "\n";
    throw Error(all + "the plan has errors; nothing ran");
  }
  auto store = EvidenceStore::open(req.evidence_path);
  std::string config_hash = plan_config_hash(resolved.plan);

  RunInfo info;
  std::set<std::string> finished;
  if (!req.resume_run.empty()) {
    auto prior = store->run(req.resume_run);
    if (!prior)
      throw Error(fmt::format("--resume: no run {} in {}", req.resume_run, req.evidence_path));
    if (prior->config_hash != config_hash)
      throw Error(fmt::format("--resume: run {} ran another plan (config hash {} , now {})",
                              req.resume_run, prior->config_hash, config_hash));
    info = *prior;
    finished = store->finished_tests(info.id);
  } else {
    info.id = new_run_id(now_ms());
    info.backend = backend.name;
    info.config_hash = config_hash;
    info.started_ms = now_ms();
  }
  info.shard = req.shards > 0 ? fmt::format("{}/{}", req.shard, req.shards) : info.shard;
  info.status = "running";

  std::string run_dir = backend.workspace + "/runs/" + info.id;
  fs::create_directories(run_dir);
  std::string plan_path = run_dir + "/plan.json";
  write_plan(resolved.plan, plan_path);
  info.manifest = build_manifest(backend, resolved.plan, plan_path, info);
  if (req.resume_run.empty())
    store->begin_run(info);
  else
    store->finish_run(info.id, 0, "running", "", info.manifest);

  std::vector<PlanFile> files = plan_files(resolved.plan, req.selection);
  if (req.shards > 0) files = shard_of(files, *store, req.shard, req.shards);
  order_longest_first(files, store->file_durations());

  auto env = plan_environment(backend, plan_path, ootci_python_dir(), process_env("PYTHONPATH"));
  int workers = req.workers > 0 ? req.workers : backend.run.workers;
  Progress progress(req.tty, store->test_durations(), workers);
  for (const auto& f : files) progress.expect_from_history(f.relpath);
  if (!finished.empty()) progress.add_finished(store->results(info.id));
  Runner runner(req, *store, info.id, run_dir, env, finished);
  progress.start();
  runner.run(files, progress);
  progress.stop();

  RunReport report;
  report.run_id = info.id;
  report.results = store->results(info.id);
  report.status = g_run_stop ? "interrupted" : "finished";
  // A verdict on part of a run would mislead; an interrupted run gets one when resumed.
  report.verdict = g_run_stop ? "" : run_verdict(*store, info, report.results);
  info.ended_ms = now_ms();
  finalize_manifest(info.manifest, info.ended_ms);
  store->finish_run(info.id, info.ended_ms, report.status, report.verdict, info.manifest);
  report.manifest_path = run_dir + "/manifest.json";
  write_json_file(report.manifest_path, info.manifest);
  report.junit_path = run_dir + "/junit.xml";
  write_junit(report.junit_path, report.results);
  return report;
}

}  // namespace ootci
