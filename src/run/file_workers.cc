#include "run/file_workers.h"

#include <fmt/format.h>

#include <filesystem>
#include <thread>

#include "base/time.h"
#include "plan/plan_env.h"
#include "run/pytest_process.h"

namespace fs = std::filesystem;

namespace ootci {

namespace {

// The stop flag of a request that has none.
const std::atomic<bool> kNeverStop{false};

// The devices of a pool of `devices` that worker `w` of `workers` owns, as the device variable
// says them: "0", or "1,3" when there are more devices than workers.
std::string devices_of_worker(int w, int workers, int devices) {
  std::string out;
  for (int d = w; d < devices; d += workers) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

}  // namespace

FileWorkers::FileWorkers(const RunRequest& req, EvidenceStore& store, std::string run_id,
                         std::string run_dir, std::map<std::string, std::string> env,
                         std::set<std::string> finished, TestLimits limits)
    : req_(req),
      stop_(req.stop ? *req.stop : kNeverStop),
      store_(store),
      run_id_(std::move(run_id)),
      run_dir_(std::move(run_dir)),
      env_(std::move(env)),
      finished_(std::move(finished)),
      limits_(std::move(limits)) {}

void FileWorkers::run(std::vector<PlanFile> files, Progress& progress) {
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
          FileProcesses procs;
          if (devices > 0) procs.devices = devices_of_worker(w, workers, devices);
          int64_t file_started = steady_us();
          run_file(files[i], procs);
          if (!stop_) {
            ++files_finished_;
            progress.file_finished(files[i].relpath, (steady_us() - file_started) / 1e6);
          }
        } catch (const std::exception& e) {
          ++files_finished_;
          try {
            record(unreported_result(files[i].relpath, "RunnerError", e.what()));
          } catch (const std::exception&) {
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
}

void FileWorkers::record(TestResult r) {
  r.device = req_.backend.device_type;
  if (!r.finished_ms) r.finished_ms = now_ms();
  std::lock_guard<std::mutex> lock(store_mutex_);
  store_.record(run_id_, r);
  progress_->add(r);
}

void FileWorkers::run_file(const PlanFile& f, FileProcesses& procs) {
  FileAttemptsOptions options;
  options.reruns = req_.backend.run.reruns;
  options.stall_timeout_s = req_.backend.run.stall_timeout_s;
  options.stop = &stop_;
  FileAttempts attempts(
      f, finished_,
      [&](const AttemptTests& tests, const ResultSink& on_result) {
        return start_pytest(f, procs, tests, on_result);
      },
      [this](const TestResult& r) { record(r); }, options);
  attempts.on_collected = [&](size_t tests) {
    progress_->expect(f.relpath, tests, f.subpart, f.subparts);
  };
  attempts.run();
}

PytestOutcome FileWorkers::start_pytest(const PlanFile& f, FileProcesses& procs,
                                        const AttemptTests& tests, const ResultSink& on_result) {
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
  bool alone = pool && tests.every_device;
  if (pool) {
    p.env["OOTCI_DEVICE_ENV"] = req_.backend.device_env;
    p.env[req_.backend.device_env] =
        alone ? devices_of_worker(0, 1, req_.backend.run.devices) : procs.devices;
    if (!alone) p.env["OOTCI_RUN_MULTI_DEVICE"] = "defer";
  }
  p.cwd = run_dir_;
  p.work_dir = fmt::format("{}/work/{}", run_dir_, attempt_counter_++);
  p.only = tests.only;
  p.only_bases = tests.only_bases;
  p.skip = tests.skip;
  p.stall_timeout_s = req_.backend.run.stall_timeout_s;
  p.dead_helper_grace_s = req_.backend.run.dead_helper_grace_s;
  p.limit_of = [this](const std::string& id) { return limits_.of(id); };
  p.on_running = [this](const std::string& id, int limit_s, bool running) {
    if (progress_) progress_->running(id, limit_s, running);
  };
  if (run_isolation(req_.backend) == "fork" && !alone) {
    // A server that hung or died collecting is what a spawned process would have met: the
    // caller reports it, and the next attempt starts over, as it would spawn again.
    if (!procs.fork_server || procs.fork_server->ended()) {
      SpawnOptions server;
      server.argv = p.command;
      server.argv.insert(server.argv.end(), {"-p", "ootci_torch.fork_server"});
      server.env = p.env;
      server.cwd = run_dir_;
      server.output_file = p.work_dir + ".fork-server.log";
      server.die_with_parent = true;
      fs::create_directories(run_dir_ + "/work");
      procs.fork_server = std::make_unique<ForkServer>(server);
    }
    p.fork_server = procs.fork_server.get();
  }
  if (!pool) return run_pytest(p, on_result, stop_);
  PoolGate::Hold hold(pool_, alone);
  return run_pytest(p, on_result, stop_);
}

}  // namespace ootci
