#include "run/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

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
#include "evidence/second_stage.h"
#include "plan/plan_env.h"
#include "plan/plan_resolve.h"
#include "run/progress.h"
#include "run/pytest_process.h"
#include "run/run_manifest.h"
#include "run/shards.h"
#include "run/test_limits.h"
#include "run/waves.h"

namespace fs = std::filesystem;

namespace ootci {

// The stop flag of a request that has none.
const std::atomic<bool> kNeverStop{false};

std::string run_isolation(const BackendConfig& backend) {
  return backend.fork_safe ? backend.run.isolation : "spawn";
}

namespace {

struct PlanFile {
  std::string path;                              // absolute
  std::string relpath;                           // test ids start with it
  std::optional<std::vector<std::string>> only;  // from a selection of single tests
  // From a selection of bases: their variants run too (with `only`, the union). Variants exist
  // only once pytest collects them, so this applies until the file's test ids are known.
  std::optional<std::vector<std::string>> bases;
  // Part `subpart` of `subparts` of the file's variants (of the run's part, with --shard), so
  // that the workers share a large file (discovery); 0 of 0: the whole file.
  int subpart = 0, subparts = 0;
};

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

// A failure worth running again: not a confirmed crash or timeout, not a strict xfail that passed
// (which is deterministic news, not noise), not a whole-file error.
bool rerunnable(const TestResult& r) {
  return is_failure(r.outcome) && classify(r) == Seen::kFail && !r.name.empty();
}

std::string tail_of_file(const std::string& path) {
  return read_file_tail(path, 2000);
}

// A device pool's admission (run.devices): workers' attempts share the pool, a test that needs
// every device waits for the running ones to end and holds it alone. New attempts wait while it
// waits, so it cannot starve. (std::shared_mutex does not promise that.)
class PoolGate {
 public:
  void enter() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
    ++sharing_;
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    --sharing_;
    changed_.notify_all();
  }
  void enter_alone() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_alone_;
    changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
    --waiting_alone_;
    alone_ = true;
  }
  void leave_alone() {
    std::lock_guard<std::mutex> lock(mutex_);
    alone_ = false;
    changed_.notify_all();
  }
  // Holds the pool (shared, or alone) for a scope.
  struct Hold {
    Hold(PoolGate& gate, bool alone) : gate(gate), alone(alone) {
      alone ? gate.enter_alone() : gate.enter();
    }
    ~Hold() { alone ? gate.leave_alone() : gate.leave(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    PoolGate& gate;
    bool alone;
  };

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int sharing_ = 0, waiting_alone_ = 0;
  bool alone_ = false;
};

// The devices of a pool of `devices` that worker `w` of `workers` owns, as the device variable
// says them: "0", or "1,3" when there are more devices than workers.
std::string devices_of_worker(int w, int workers, int devices) {
  std::string out;
  for (int d = w; d < devices; d += workers) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

// Runs the plan's files on worker threads; every result goes to the store as it finishes.
class Runner {
 public:
  Runner(const RunRequest& req, EvidenceStore& store, std::string run_id, std::string run_dir,
         std::map<std::string, std::string> env, std::set<std::string> finished, TestLimits limits)
      : req_(req),
        stop_(req.stop ? *req.stop : kNeverStop),
        store_(store),
        run_id_(std::move(run_id)),
        run_dir_(std::move(run_dir)),
        env_(std::move(env)),
        finished_(std::move(finished)),
        limits_(std::move(limits)) {}

  // Every file was worked through to its end (a stop may still have come in afterwards).
  bool all_done() const { return files_finished_ == files_total_; }
  // A stop came in before every file was worked through: the run is interrupted.
  bool stopped_early() const { return stop_ && !all_done(); }

  // Called again for a second stage: all_done() is about the latest call.
  void run(std::vector<PlanFile> files, Progress& progress) {
    progress_ = &progress;
    files_total_ = files.size();
    files_finished_ = 0;
    std::mutex queue_mutex;
    size_t next = 0;
    int workers = run_workers(req_);
    int devices = req_.backend.run.devices;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        for (;;) {
          size_t i;
          {
            std::lock_guard<std::mutex> lock(queue_mutex);
            if (next >= files.size() || stop_) return;
            i = next++;
          }
          // One file's trouble (a full disk, a busy database) must not end the run.
          try {
            FileState state;
            if (devices > 0) state.devices = devices_of_worker(w, workers, devices);
            int64_t file_started = steady_us();
            run_file(files[i], state);
            if (!stop_) {
              ++files_finished_;
              progress.file_finished(files[i].relpath, (steady_us() - file_started) / 1e6);
            }
          } catch (const std::exception& e) {
            ++files_finished_;
            try {
              record(error_result(files[i].relpath, "RunnerError", e.what(), {}));
            } catch (const std::exception&) {
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }

 private:
  struct FileState {
    std::vector<std::string> all;               // every test of the file this run covers
    std::set<std::string> done;                 // has a result in this run
    std::map<std::string, TestResult> started;  // mode/op/dtype of tests seen starting
    std::vector<TestResult> results;            // this pass's results, for reruns
    std::unique_ptr<ForkServer> fork_server;    // run.isolation: fork, from the first attempt
    std::string devices;                        // the worker's, under a device pool
    std::set<std::string> multi_device;         // tests that run alone with every device
  };

  void record(TestResult r) {
    r.device = req_.backend.device_type;
    if (!r.finished_ms) r.finished_ms = now_ms();
    std::lock_guard<std::mutex> lock(store_mutex_);
    store_.record(run_id_, r);
    progress_->add(r);
  }

  PytestOutcome attempt(const PlanFile& f, FileState& st,
                        std::optional<std::vector<std::string>> only,
                        const std::set<std::string>& skip,
                        const std::function<void(const TestResult&)>& on_result,
                        std::optional<std::vector<std::string>> only_bases = std::nullopt) {
    PytestRequest p;
    p.command = python_command(req_.backend, ootci_python_dir());
    p.command.insert(p.command.end(), {"-m", "pytest", f.path, "-p", "no:cacheprovider", "-q",
                                       "--color=no", "-p", "ootci_torch.run_reporter"});
    p.command.insert(p.command.end(), req_.backend.run.pytest_args.begin(),
                     req_.backend.run.pytest_args.end());
    p.env = env_;
    if (f.subparts > 0) p.env["OOTCI_RUN_SUBPART"] = fmt::format("{}/{}", f.subpart, f.subparts);
    // Under a device pool, tests that need every device run alone with all of them, spawned: a
    // backend reads its devices when it is imported, so the fork server's would be the worker's.
    bool pool = req_.backend.run.devices > 0;
    bool alone = pool && only && !only->empty() &&
                 std::all_of(only->begin(), only->end(),
                             [&](const std::string& id) { return st.multi_device.count(id); });
    if (pool) {
      p.env["OOTCI_DEVICE_ENV"] = req_.backend.device_env;
      p.env[req_.backend.device_env] =
          alone ? devices_of_worker(0, 1, req_.backend.run.devices) : st.devices;
      if (!alone) p.env["OOTCI_RUN_MULTI_DEVICE"] = "defer";
    }
    p.cwd = run_dir_;
    p.work_dir = fmt::format("{}/work/{}", run_dir_, attempt_counter_++);
    p.only = std::move(only);
    p.only_bases = std::move(only_bases);
    p.skip = skip;
    p.stall_timeout_s = req_.backend.run.stall_timeout_s;
    p.dead_helper_grace_s = req_.backend.run.dead_helper_grace_s;
    p.limit_of = [this](const std::string& id) { return limits_.of(id); };
    p.on_running = [this](const std::string& id, int limit_s, bool running) {
      if (progress_) progress_->running(id, limit_s, running);
    };
    if (run_isolation(req_.backend) == "fork" && !alone) {
      // A server that hung or died collecting is what a spawned process would have met: the
      // caller reports it, and the next attempt starts over, as it would spawn again.
      if (!st.fork_server || st.fork_server->ended()) {
        SpawnOptions server;
        server.argv = p.command;
        server.argv.insert(server.argv.end(), {"-p", "ootci_torch.fork_server"});
        server.env = p.env;
        server.cwd = run_dir_;
        server.output_file = p.work_dir + ".fork-server.log";
        server.die_with_parent = true;
        fs::create_directories(run_dir_ + "/work");
        st.fork_server = std::make_unique<ForkServer>(server);
      }
      p.fork_server = st.fork_server.get();
    }
    if (!pool) return run_pytest(p, on_result, stop_);
    PoolGate::Hold hold(pool_, alone);
    return run_pytest(p, on_result, stop_);
  }

  // A result the process could not report itself, with the test's mode, op and dtype when the
  // test was seen starting (so an xfail test that crashes is judged as xfail).
  static TestResult error_result(const std::string& id, const std::string& error_class,
                                 const std::string& message,
                                 const std::map<std::string, TestResult>& started,
                                 double seconds = 0) {
    TestResult r;
    auto it = started.find(id);
    if (it != started.end()) r = it->second;
    split_test_id(id, r);
    r.outcome = Outcome::kError;
    r.error_class = error_class;
    r.message = message;
    r.duration_s = seconds;
    r.finished_ms = 0;
    return r;
  }

  void keep(FileState& st, const TestResult& r) {
    st.results.push_back(r);
    st.done.insert(r.test_id);
    record(r);
  }

  // The result of a test that crashed its process (`sig`) among other tests but not alone.
  static TestResult survived_alone(TestResult r, int sig) {
    r.message =
        fmt::format("crashed the process ({}) after other tests, but not when run alone: {}",
                    signal_name(sig), r.message);
    return r;
  }

  // The test that was running when its process died from a signal, run again alone: a crash that
  // repeats is the test's own; one that does not came from the tests before it.
  // `first` is an attempt in which it already ran first (alone): it is not run again.
  void confirm_crash(const PlanFile& f, FileState& st, const std::string& id, int sig,
                     double seconds, const PytestOutcome* first = nullptr) {
    std::optional<TestResult> alone;
    PytestOutcome again =
        first ? *first : attempt(f, st, std::vector<std::string>{id}, {}, [&](const TestResult& r) {
          if (r.test_id == id) alone = r;
        });
    for (const auto& [k, v] : again.started) st.started.emplace(k, v);
    if (again.ending == PytestEnding::kInterrupted) return;
    if (alone) {
      keep(st, survived_alone(*alone, sig));
      return;
    }
    std::string why;
    std::string cls = signal_name(sig);
    if (again.ending == PytestEnding::kSignaled && again.in_progress == id) {
      cls = signal_name(again.signal);
      why = fmt::format("the test process died from {} while this test ran, also when run alone",
                        cls);
    } else if (again.ending == PytestEnding::kTestTimeout && again.killed_test == id) {
      cls = kTimeoutError;
      why = fmt::format(
          "crashed ({}) among other tests; alone it ran longer than its limit of {} s ({})",
          signal_name(sig), again.killed_limit.seconds, again.killed_limit.why);
    } else {
      why = fmt::format(
          "the test process died from {} while this test ran; run alone, the "
          "process ended before the test could report",
          signal_name(sig));
    }
    keep(st, error_result(id, cls, why + "\n" + tail_of_file(again.log_path), st.started,
                          std::max(seconds, again.in_progress_s)));
  }

  // How the run alone of `id` ended when the test did not report: what tells a death that repeats
  // from a test that hangs alone (no helper died, or none the watcher could see).
  static std::string alone_ending(const PytestOutcome& again, const std::string& id) {
    if (again.ending == PytestEnding::kHelperDied && again.killed_test == id) return "the same";
    if (again.ending == PytestEnding::kTestTimeout && again.killed_test == id)
      return fmt::format("no helper died, and it ran longer than its limit of {} s ({})",
                         again.killed_limit.seconds, again.killed_limit.why);
    if (again.ending == PytestEnding::kSignaled && again.in_progress == id)
      return fmt::format("the test process died from {}", signal_name(again.signal));
    return "the test did not report either";
  }

  // The test whose helper process (a device daemon) died while it ran, run again alone unless it
  // ran alone already: a death that repeats is the test's own; one that does not came from the
  // tests before it or from the daemon's own chance (OpenReg's dies now and then), and the test's
  // result is what it did alone. Running first in a process is not enough, unlike for a crash.
  void confirm_helper_death(const PlanFile& f, FileState& st, const PytestOutcome& out) {
    const std::string& id = out.killed_test;
    bool ran_alone = out.collected && out.collected->size() == 1;
    std::optional<TestResult> alone;
    PytestOutcome again =
        ran_alone ? out
                  : attempt(f, st, std::vector<std::string>{id}, {}, [&](const TestResult& r) {
                      if (r.test_id == id) alone = r;
                    });
    for (const auto& [k, v] : again.started) st.started.emplace(k, v);
    if (again.ending == PytestEnding::kInterrupted) return;
    if (alone) {
      alone->message = fmt::format("{}; run again alone, its helpers lived: {}", out.helper_death,
                                   alone->message);
      keep(st, *alone);
      return;
    }
    std::string why = out.helper_death;
    if (!ran_alone) why += "; run alone, " + alone_ending(again, id);
    keep(st,
         error_result(id, std::string(kHelperDiedError), why + "\n" + tail_of_file(again.log_path),
                      st.started, out.in_progress_s));
  }

  // One process per test, so whatever kills a process takes only its own test with it.
  void run_one_by_one(const PlanFile& f, FileState& st, const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      if (st.done.count(id) || stop_) continue;
      PytestOutcome one = attempt(f, st, std::vector<std::string>{id}, {},
                                  [&](const TestResult& r) { keep(st, r); });
      for (const auto& [k, v] : one.started) st.started.emplace(k, v);
      if (st.done.count(id) || one.ending == PytestEnding::kInterrupted) continue;
      std::string cls = one.ending == PytestEnding::kSignaled ? signal_name(one.signal)
                        : one.ending == PytestEnding::kExited ? "NotReported"
                                                              : std::string(kTimeoutError);
      keep(st, error_result(id, cls, tail_of_file(one.log_path), st.started, one.in_progress_s));
    }
  }

  // A test that crashed its process after other tests is not judged yet: it leads the rest of
  // the file into the next process, so it runs there alone, as a fresh process would run it,
  // and if it survives, the rest follows it in that process instead of in one more.
  struct Suspect {
    std::string id;
    int signal;
    double seconds;
  };

  // A file's first pass between two attempts: what the next one runs, and what the pass has seen.
  struct FirstPass {
    std::optional<std::vector<std::string>> only;  // the next attempt's tests (nullopt: all)
    bool stall_retried = false;
    int attempts_without_progress = 0;
    std::optional<Suspect> suspect;
  };

  // What finish_attempt decides: another attempt, the end of the first pass, or a stop.
  enum class Step { kAgain, kFileDone, kInterrupted };

  // The file's first pass: crashes and hangs are isolated, and every test ends with a result.
  // One attempt at a time, as ninja's Builder starts an edge and finishes its command:
  // finish_attempt reads how the attempt ended and decides what runs next.
  void run_file(const PlanFile& f, FileState& st) {
    st.done = finished_;
    FirstPass pass;
    pass.only = f.only;
    for (;;) {
      PytestOutcome out = start_attempt(f, st, pass);
      Step next = finish_attempt(f, st, pass, out);
      if (next == Step::kInterrupted) return;
      if (next == Step::kFileDone) break;
    }
    if (!stop_ && !st.multi_device.empty())
      run_one_by_one(f, st, {st.multi_device.begin(), st.multi_device.end()});
    rerun_failures(f, st);
  }

  // One attempt of the first pass; a suspect that reports survived its run alone.
  PytestOutcome start_attempt(const PlanFile& f, FileState& st, const FirstPass& pass) {
    PytestOutcome out = attempt(
        f, st, pass.only, st.done,
        [&](const TestResult& r) {
          bool survivor = pass.suspect && r.test_id == pass.suspect->id;
          keep(st, survivor ? survived_alone(r, pass.suspect->signal) : r);
        },
        st.all.empty() ? f.bases : std::nullopt);
    for (const auto& [k, v] : out.started) st.started.emplace(k, v);
    st.multi_device.insert(out.multi_device.begin(), out.multi_device.end());
    if (out.collected && st.all.empty()) {
      st.all = *out.collected;
      progress_->expect(f.relpath, st.all.size() + st.multi_device.size(), f.subpart, f.subparts);
    }
    return out;
  }

  Step finish_attempt(const PlanFile& f, FileState& st, FirstPass& pass, const PytestOutcome& out) {
    if (out.ending == PytestEnding::kInterrupted) return Step::kInterrupted;
    bool exited = out.ending == PytestEnding::kExited;
    if (exited && !out.in_progress && out.results.empty() && st.all.empty()) {
      // Nothing ran: an import or collection error (pytest exits 2), or no tests (5).
      if (out.exit_code != 5 && out.exit_code != 0)
        keep(st,
             error_result(f.relpath, "CollectionError",
                          fmt::format("pytest exited {} before running a test\n{}", out.exit_code,
                                      out.collect_errors.empty() ? tail_of_file(out.log_path)
                                                                 : out.collect_errors.front()),
                          st.started));
      return Step::kFileDone;
    }
    if (settle_ending(f, st, pass, out) == Step::kFileDone) return Step::kFileDone;
    return plan_rest(f, st, pass, out);
  }

  // Records what the attempt's ending says about the test it stopped in (or about the file);
  // file_done when that ends the file's first pass.
  Step settle_ending(const PlanFile& f, FileState& st, FirstPass& pass, const PytestOutcome& out) {
    bool exited = out.ending == PytestEnding::kExited;
    std::optional<Suspect> judged = std::exchange(pass.suspect, std::nullopt);
    if (judged && !st.done.count(judged->id)) {
      // It ran first and did not report: this attempt was its run alone.
      confirm_crash(f, st, judged->id, judged->signal, judged->seconds, &out);
    } else if (out.ending == PytestEnding::kTestTimeout) {
      keep(st, error_result(out.killed_test, std::string(kTimeoutError),
                            fmt::format("ran longer than its limit of {} s ({})",
                                        out.killed_limit.seconds, out.killed_limit.why),
                            st.started, out.in_progress_s));
    } else if (out.ending == PytestEnding::kHelperDied) {
      confirm_helper_death(f, st, out);
    } else if (out.in_progress && out.ending == PytestEnding::kSignaled) {
      // A death its fork server caused says nothing about the test: it runs alone anyway.
      bool first = out.started.size() == 1 && out.results.empty() && !out.server_died;
      if (first)
        confirm_crash(f, st, *out.in_progress, out.signal, out.in_progress_s, &out);
      else if (!st.all.empty())
        pass.suspect = Suspect{*out.in_progress, out.signal, out.in_progress_s};
      else
        confirm_crash(f, st, *out.in_progress, out.signal, out.in_progress_s);
    } else if (out.in_progress && exited) {
      keep(st, error_result(*out.in_progress, "ProcessExit",
                            fmt::format("the test process exited with status {} during this "
                                        "test\n{}",
                                        out.exit_code, tail_of_file(out.log_path)),
                            st.started, out.in_progress_s));
    } else if (out.ending == PytestEnding::kStalled) {
      if (!pass.stall_retried) {
        pass.stall_retried = true;  // kill and retry the rest once
        return Step::kAgain;
      }
      // Hung twice outside any test (import, collection, teardown): the file is one error.
      keep(st,
           error_result(f.relpath, std::string(kTimeoutError),
                        fmt::format("no output for stall_timeout_s={} outside any test, "
                                    "twice (after a retry)\n{}",
                                    req_.backend.run.stall_timeout_s, tail_of_file(out.log_path)),
                        st.started));
      return Step::kFileDone;
    } else if (!exited) {
      // Died between tests (module setup, or teardown after a test's call phase): nobody to
      // blame, so the death itself is a file-level error and the rest runs one process per
      // test.
      std::string cls = signal_name(out.signal);
      keep(st, error_result(f.relpath, cls,
                            fmt::format("the test process died ({}) outside any test's call "
                                        "phase\n{}",
                                        cls, tail_of_file(out.log_path)),
                            st.started));
      if (!st.all.empty()) run_one_by_one(f, st, st.all);
      return Step::kFileDone;
    }
    return Step::kAgain;
  }

  // The tests still without a result go to the next attempt, unless none are left or attempts
  // stopped getting anywhere.
  Step plan_rest(const PlanFile& f, FileState& st, FirstPass& pass, const PytestOutcome& out) {
    std::vector<std::string> rest;
    for (const auto& id : st.all)
      if (!st.done.count(id)) rest.push_back(id);
    if (rest.empty() && !st.all.empty()) return Step::kFileDone;
    // A clean exit that left tests unreported (pytest -x, a lost event line): run the rest,
    // unless a whole attempt got nowhere twice.
    if (out.ending == PytestEnding::kExited && !out.in_progress) {
      pass.attempts_without_progress = out.results.empty() ? pass.attempts_without_progress + 1 : 0;
      if (pass.attempts_without_progress >= 2) {
        for (const auto& id : rest)
          keep(st, error_result(id, "NotReported",
                                "pytest ended without reporting this test (twice)\n" +
                                    tail_of_file(out.log_path),
                                st.started));
        return Step::kFileDone;
      }
    }
    pass.only = st.all.empty() ? f.only : std::optional<std::vector<std::string>>(rest);
    return Step::kAgain;
  }

  // Failed tests run again in fresh processes; one that then passes is flaky, not a failure.
  void rerun_failures(const PlanFile& f, FileState& st) {
    std::map<std::string, TestResult> still;  // latest result of each failing test
    for (const auto& r : st.results) {
      if (rerunnable(r))
        still[r.test_id] = r;
      else
        still.erase(r.test_id);
    }
    for (int round = 1; round <= req_.backend.run.reruns && !still.empty(); ++round) {
      if (stop_) return;
      // Tests that need every device rerun alone, apart from the others.
      std::vector<std::string> shared, alone;
      for (const auto& [id, r] : still) (st.multi_device.count(id) ? alone : shared).push_back(id);
      for (const auto* ids : {&shared, &alone}) {
        if (ids->empty()) continue;
        attempt(f, st, *ids, {}, [&](const TestResult& again) {
          auto it = still.find(again.test_id);
          if (it == still.end()) return;
          // A pass clears the failure (flaky); a new failure replaces it; a skip or an expected
          // failure on a rerun proves nothing, so the old failure stands.
          // Only a real pass clears a failure; a skip or an expected failure does not.
          TestResult r = is_pass(again.outcome) || is_failure(again.outcome) ? again : it->second;
          r.reruns = round;
          r.flaky = is_pass(again.outcome);
          if (r.flaky)
            still.erase(it);
          else
            it->second = r;
          record(r);
        });
      }
    }
  }

  const RunRequest& req_;
  const std::atomic<bool>& stop_;
  EvidenceStore& store_;
  std::string run_id_;
  std::string run_dir_;
  std::map<std::string, std::string> env_;
  std::set<std::string> finished_;
  std::mutex store_mutex_;
  std::atomic<int> attempt_counter_{0};
  PoolGate pool_;  // run.devices
  std::atomic<size_t> files_finished_{0};
  size_t files_total_ = 0;
  Progress* progress_ = nullptr;
  TestLimits limits_;
};

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
nlohmann::json plan_to_run(const RunRequest& req) {
  PlanResult resolved;
  if (req.plan_override)
    resolved.plan = *req.plan_override;
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
// `ootci shards --select` assigns them from the same evidence (run/waves.h).
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
                 const std::string& config_hash, nlohmann::json second_stage) {
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
  if (req.part.n > 0) info.shard = fmt::format("{}/{}", req.part.k, req.part.n);
  run.second_stage = std::move(second_stage);
  run.wave = req.wave;
  run.files = plan_files(plan, req.wave > 0 ? wave_part(req, store, plan) : req.selection);
  run.labels = req.labels.value_or(req.backend.run.labels);
  if (!run.labels.empty()) run.files = only_labelled(plan, run.files, run.labels);
  if (req.shards > 0 && req.wave == 0)
    run.files = shard_of(run.files, store, req.shard, req.shards);
  return run;
}

RunStart start_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan) {
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
  RunStart run = req.resume_run.empty() ? new_run(req, store, plan, config_hash, second_stage)
                                        : resumed_run(req, store, plan, config_hash);
  run.info.status = RunStatus::kRunning;
  return run;
}

// Writes the run's plan and manifest into `run_dir` and records the run as running.
void open_run(const RunRequest& req, EvidenceStore& store, const nlohmann::json& plan,
              RunStart& run, const std::string& run_dir, const std::string& plan_path) {
  fs::create_directories(run_dir);
  write_plan(plan, plan_path);
  RunInfo& info = run.info;
  info.manifest = build_manifest(req.backend, plan, plan_path, info);
  record_files(info.manifest, run.files);
  if (!run.labels.empty()) info.manifest["labels"] = run.labels;
  info.manifest["isolation"] = run_isolation(req.backend);
  if (!run.second_stage.is_null()) info.manifest["second_stage"] = run.second_stage;
  if (run.wave > 0) info.manifest["wave"] = run.wave;
  if (req.discovery != DiscoveryPass::kNone)
    info.manifest["discovery_pass"] = discovery_pass_name(req.discovery);
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
                                                   const std::vector<std::string>& labels) {
  auto env =
      plan_environment(req.backend, plan_path, ootci_python_dir(), process_env("PYTHONPATH"));
  if (!labels.empty()) env["OOTCI_LABELS"] = fmt::format("{}", fmt::join(labels, ","));
  if (req.part.n > 0) {
    env["OOTCI_RUN_PART"] = fmt::format("{}/{}", req.part.k, req.part.n);
    std::string placed;
    for (const auto& [id, part] : req.part.placed) placed += fmt::format("{}\t{}\n", id, part);
    env["OOTCI_RUN_PART_PLACED"] = run_dir + "/part_placed.txt";
    write_file_atomically(env["OOTCI_RUN_PART_PLACED"], placed);
    if (!req.part.placed_among_workers.empty()) {
      std::string shares;
      for (const auto& [id, worker] : req.part.placed_among_workers)
        shares += fmt::format("{}\t{}\n", id, worker);
      env["OOTCI_RUN_SUBPART_PLACED"] = run_dir + "/subpart_placed.txt";
      write_file_atomically(env["OOTCI_RUN_SUBPART_PLACED"], shares);
    }
  }
  if (req.record_ops) {
    env["OOTCI_RECORD_OPS"] = "1";
    env["OOTCI_DEVICE_TYPE"] = req.backend.device_type;
  }
  return env;
}

// A staged selection's second stage, once the first is through: decided from the first stage's
// results against the baseline, recorded in the manifest, and run when called for. Returns
// whether a stop cut it short.
bool run_second_stage(Runner& runner, Progress& progress, EvidenceStore& store,
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
  runner.run(more, progress);
  return runner.stopped_early();
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
    case DiscoveryPass::kNone:
      return "";
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

RunReport run_plan(const RunRequest& req, EvidenceStore& store) {
  nlohmann::json plan = plan_to_run(req);
  // Held before a resumed run's results are touched, and until the run is closed.
  std::optional<FileLock> lock;
  if (!req.resume_run.empty() && store.run(req.resume_run))
    lock.emplace(lock_run(req.backend, req.resume_run));
  RunStart run = start_run(req, store, plan);
  if (!lock) lock.emplace(lock_run(req.backend, run.info.id));
  std::string run_dir = run_folder(req.backend, run.info.id);
  std::string plan_path = run_dir + "/plan.json";
  open_run(req, store, plan, run, run_dir, plan_path);
  auto env = run_environment(req, run_dir, plan_path, run.labels);

  Progress progress(req.tty, store.test_durations(), run_workers(req));
  for (const auto& f : run.files) progress.expect_from_history(f.relpath);
  if (!run.finished.empty()) {
    std::vector<TestResult> settled;
    for (const auto& r : store.results(run.info.id))
      if (run.finished.count(r.test_id)) settled.push_back(r);
    progress.add_finished(settled);
  }
  Runner runner(req, store, run.info.id, run_dir, env, run.finished,
                TestLimits(req.backend.run, store.completed_durations(),
                           req.discovery != DiscoveryPass::kNone));
  progress.start();
  // Discovery runs every variant of large files: its workers share them.
  runner.run(req.discovery != DiscoveryPass::kNone
                 ? shared_among_workers(run.files, run_workers(req))
                 : run.files,
             progress);
  progress.stop();

  // A stop signal that arrives after the last test is too late to have cut anything short.
  bool stopped = runner.stopped_early();
  if (!stopped && !run.second_stage.is_null() && !run.second_stage.contains("ran"))
    stopped = run_second_stage(runner, progress, store, plan, run);
  return close_run(req, store, run.info, stopped, run_dir, env);
}

RunReport run_plan(const RunRequest& req) {
  return run_plan(req, *EvidenceStore::open(req.evidence_path));
}

}  // namespace ootci
