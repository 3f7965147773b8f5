#include "run/pytest_process.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_text.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "run/process_tree.h"

namespace fs = std::filesystem;

namespace ootci {

void split_test_id(const std::string& id, TestResult& into) {
  into.test_id = id;
  size_t first = id.find("::");
  if (first == std::string::npos) {
    into.file = id;
    return;
  }
  into.file = id.substr(0, first);
  std::string rest = id.substr(first + 2);
  size_t second = rest.find("::");
  if (second == std::string::npos) {
    into.name = rest;
  } else {
    into.cls = rest.substr(0, second);
    into.name = rest.substr(second + 2);
  }
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

namespace {

void write_ids(const std::string& path, const std::vector<std::string>& ids) {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& id : ids) out << id << "\n";
  if (!out) throw Error(fmt::format("{}: cannot write", path));
}

// Reads the lines appended to the events file since the last call; a partial last line waits.
class EventReader {
 public:
  explicit EventReader(std::string path) : path_(std::move(path)) {}

  // Returns true if anything new arrived. A line that is not a JSON object is counted, not used.
  bool poll(const std::function<void(const nlohmann::json&)>& on_event) {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return false;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (chunk.empty()) return false;
    pending_ += chunk;
    offset_ += chunk.size();
    size_t start = 0, nl;
    while ((nl = pending_.find('\n', start)) != std::string::npos) {
      nlohmann::json event = nlohmann::json::parse(pending_.substr(start, nl - start), nullptr,
                                                   /*allow_exceptions=*/false);
      if (event.is_object())
        on_event(event);
      else
        ++bad_lines_;
      start = nl + 1;
    }
    pending_.erase(0, start);
    return true;
  }

  int bad_lines() const { return bad_lines_; }

 private:
  std::string path_;
  size_t offset_ = 0;
  std::string pending_;
  int bad_lines_ = 0;
};

// Reads a field leniently: a reporter bug must not take the runner down.
template <typename T>
T field(const nlohmann::json& e, const char* key, T fallback) {
  auto it = e.find(key);
  if (it == e.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

TestResult result_from_event(const nlohmann::json& e) {
  TestResult r;
  split_test_id(field<std::string>(e, "id", ""), r);
  r.outcome = outcome_or_error(field<std::string>(e, "outcome", "error"));
  r.duration_s = field<double>(e, "duration", 0.0);
  r.mode = parse_test_mode(field<std::string>(e, "mode", ""));
  r.op = field<std::string>(e, "op", "");
  r.dtype = field<std::string>(e, "dtype", "");
  r.base = field<std::string>(e, "base", "");
  r.ops = field<std::vector<std::string>>(e, "ops", {});
  std::sort(r.ops.begin(), r.ops.end());
  r.ops.erase(std::unique(r.ops.begin(), r.ops.end()), r.ops.end());
  r.op_dtypes = field<std::vector<std::string>>(e, "op_dtypes", {});
  std::sort(r.op_dtypes.begin(), r.op_dtypes.end());
  r.op_dtypes.erase(std::unique(r.op_dtypes.begin(), r.op_dtypes.end()), r.op_dtypes.end());
  r.input_op_dtypes = field<std::vector<std::string>>(e, "input_op_dtypes", {});
  std::sort(r.input_op_dtypes.begin(), r.input_op_dtypes.end());
  r.error_class = field<std::string>(e, "error_class", "");
  r.message = field<std::string>(e, "message", "");
  r.finished_ms = now_ms();
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What is known of a running pytest between two looks at it: the reporter's events so far, the
// test in progress and its limit, and the outcome being built.
class PytestWatch {
 public:
  using Clock = std::chrono::steady_clock;

  PytestWatch(const PytestRequest& req, const std::string& events, const std::string& log_path,
              const std::function<void(const TestResult&)>& on_result)
      : req_(req), reader_(events), on_result_(on_result) {
    out_.log_path = log_path;
  }
  // Whoever watches the run's progress learns that the test stopped running, also on a throw.
  ~PytestWatch() { set_running(std::nullopt); }

  // Takes in new events and log output, and looks at the helpers of `pid`, the test process.
  void poll(pid_t pid) {
    bool active = read_events();
    uintmax_t size = file_size_or_zero(out_.log_path);
    if (active || size != log_size_) last_activity_ = Clock::now();
    log_size_ = size;
    check_helpers(pid);
  }

  // Why the process must be killed now, if it must. Inside a test only the per-test timeout
  // applies (a test prints nothing until it ends); the stall watchdog covers everything else:
  // imports, collection, teardown.
  std::optional<PytestEnding> kill_reason(bool stop) const {
    if (stop) return PytestEnding::kInterrupted;
    if (out_.in_progress && seconds_since(test_started_) > limit_.seconds)
      return PytestEnding::kTestTimeout;
    if (out_.in_progress && dead_helper_ && dead_helper_test_ == *out_.in_progress &&
        seconds_since(dead_helper_seen_) >= req_.dead_helper_grace_s)
      return PytestEnding::kHelperDied;
    if (!out_.in_progress && seconds_since(last_activity_) > req_.stall_timeout_s)
      return PytestEnding::kStalled;
    return std::nullopt;
  }

  // Before the kill: the test a timeout kills is named while it is still the one in progress.
  void killing(PytestEnding why) {
    if (why != PytestEnding::kTestTimeout && why != PytestEnding::kHelperDied) return;
    out_.killed_test = *out_.in_progress;
    out_.killed_limit = limit_;
    if (why == PytestEnding::kHelperDied)
      // No pid, and the grace rather than the seconds measured: the same death reads the same
      // in every test, so reports group them as one cause.
      out_.helper_death = fmt::format(
          "a process the test process started ({}) {}, and {} s later the test was still waiting "
          "on it (run.dead_helper_grace_s): killed",
          dead_helper_->name, exit_text(dead_helper_->exit_status), req_.dead_helper_grace_s);
  }

  // The outcome once the process the watcher killed for `why` is gone.
  PytestOutcome killed(PytestEnding why) {
    read_events();
    out_.ending = why;
    if (out_.in_progress == out_.killed_test) out_.in_progress_s = seconds_since(test_started_);
    if (why != PytestEnding::kTestTimeout && why != PytestEnding::kHelperDied)
      settle();
    else
      out_.bad_events = reader_.bad_lines();
    return std::move(out_);
  }

  // The outcome once the process ended by itself with wait status `status`.
  PytestOutcome ended(int status) {
    read_events();
    if (WIFSIGNALED(status)) {
      out_.ending = PytestEnding::kSignaled;
      out_.signal = WTERMSIG(status);
    } else {
      out_.exit_code = WEXITSTATUS(status);
    }
    settle();
    return std::move(out_);
  }

 private:
  bool read_events() {
    return reader_.poll([this](const nlohmann::json& e) { on_event(e); });
  }

  void on_event(const nlohmann::json& e) {
    std::string kind = field<std::string>(e, "e", "");
    if (kind == "collected") {
      out_.collected = field<std::vector<std::string>>(e, "tests", {});
      out_.multi_device = field<std::vector<std::string>>(e, "multi_device", {});
    } else if (kind == "start") {
      TestResult skeleton = result_from_event(e);
      out_.in_progress = skeleton.test_id;
      out_.started[skeleton.test_id] = skeleton;
      test_started_ = Clock::now();
      called_.reset();
      limit_ = req_.limit_of ? req_.limit_of(skeleton.test_id)
                             : TestLimit{req_.test_timeout_s,
                                         fmt::format("test_timeout_s={}", req_.test_timeout_s)};
      set_running(skeleton.test_id);
    } else if (kind == "called") {
      called_ = result_from_event(e);
    } else if (kind == "result") {
      TestResult r = result_from_event(e);
      if (out_.in_progress == r.test_id) out_.in_progress.reset();
      called_.reset();
      set_running(out_.in_progress);
      on_result_(r);
      out_.results.push_back(std::move(r));
    } else if (kind == "collect_error") {
      out_.collect_errors.push_back(field<std::string>(e, "message", ""));
    }
  }

  // Once a second while a test runs: a helper of the test process that died unsuccessfully and
  // that no one waits for (process_tree.h), first seen during this test.
  void check_helpers(pid_t pid) {
    if (req_.dead_helper_grace_s <= 0 || !out_.in_progress) {
      dead_helper_.reset();
      return;
    }
    if (seconds_since(helpers_checked_) < 1) return;
    helpers_checked_ = Clock::now();
    std::optional<ProcessStat> dead = dead_helper(read_processes(), pid);
    if (!dead) {
      dead_helper_.reset();
    } else if (!dead_helper_ || dead_helper_->pid != dead->pid ||
               dead_helper_test_ != *out_.in_progress) {
      dead_helper_ = dead;
      dead_helper_seen_ = Clock::now();
      dead_helper_test_ = *out_.in_progress;
    }
  }

  // Whoever watches the run's progress learns which test runs, and when it stops running.
  void set_running(const std::optional<std::string>& id) {
    if (!req_.on_running || running_ == id.value_or("")) return;
    if (!running_.empty()) req_.on_running(running_, 0, false);
    running_ = id.value_or("");
    if (!running_.empty()) req_.on_running(running_, limit_.seconds, true);
  }

  // After an abnormal end: a test whose call phase had finished keeps that outcome; the death
  // belongs to teardown, not to the test.
  void settle() {
    out_.bad_events = reader_.bad_lines();
    if (out_.in_progress) out_.in_progress_s = seconds_since(test_started_);
    if (out_.in_progress && called_ && called_->test_id == *out_.in_progress) {
      called_->message =
          fmt::format("(the process died after this test's call phase) {}", called_->message);
      on_result_(*called_);
      out_.results.push_back(*called_);
      out_.in_progress.reset();
      out_.died_after_call = true;
    }
  }

  const PytestRequest& req_;
  EventReader reader_;
  const std::function<void(const TestResult&)>& on_result_;
  PytestOutcome out_;
  Clock::time_point test_started_ = Clock::now();
  Clock::time_point last_activity_ = Clock::now();
  uintmax_t log_size_ = 0;
  std::optional<TestResult> called_;  // the in-progress test's call outcome, once reported
  TestLimit limit_;                   // the in-progress test's
  std::string running_;               // the test the progress watcher was told runs
  Clock::time_point helpers_checked_ = Clock::now();
  std::optional<ProcessStat> dead_helper_;  // seen while dead_helper_test_ ran, at _seen_
  std::string dead_helper_test_;
  Clock::time_point dead_helper_seen_;
};

// Watches a running pytest (spawned, or forked by a fork server) to its end: results as they
// come, the per-test timeout and the stall watchdog, and how it ended.
template <typename Process>
PytestOutcome watch(Process& proc, const PytestRequest& req, const std::string& events,
                    const std::string& log_path,
                    const std::function<void(const TestResult&)>& on_result,
                    const std::atomic<bool>& stop) {
  PytestWatch watched(req, events, log_path, on_result);
  std::optional<int> status;
  while (!(status = proc.try_wait())) {
    watched.poll(proc.pid());
    if (std::optional<PytestEnding> why = watched.kill_reason(stop)) {
      watched.killing(*why);
      proc.signal(SIGKILL);
      proc.wait();
      return watched.killed(*why);
    }
    proc.await_exit(50);
  }
  proc.kill_group();
  return watched.ended(*status);
}

}  // namespace

PytestOutcome run_pytest(const PytestRequest& req,
                         const std::function<void(const TestResult&)>& on_result,
                         const std::atomic<bool>& stop) {
  fs::create_directories(req.work_dir);
  std::string events = req.work_dir + "/events.jsonl";
  std::string log_path = req.work_dir + "/pytest.log";
  fs::remove(events);

  // What this attempt adds to the environment: where its events go and which tests it runs.
  std::map<std::string, std::string> attempt_env = {{"OOTCI_RUN_EVENTS", events}};
  if (req.only) {
    write_ids(req.work_dir + "/only.txt", *req.only);
    attempt_env["OOTCI_RUN_ONLY"] = req.work_dir + "/only.txt";
  }
  if (req.only_bases) {
    write_ids(req.work_dir + "/only_bases.txt", *req.only_bases);
    attempt_env["OOTCI_RUN_ONLY_BASES"] = req.work_dir + "/only_bases.txt";
  }
  if (!req.skip.empty()) {
    write_ids(req.work_dir + "/skip.txt", {req.skip.begin(), req.skip.end()});
    attempt_env["OOTCI_RUN_SKIP"] = req.work_dir + "/skip.txt";
  }

  if (req.fork_server) {
    ForkServer& server = *req.fork_server;
    auto child = server.fork(attempt_env, log_path, req.stall_timeout_s, stop);
    if (!child && server.ended()) {
      // What a spawned pytest that hung or died before its first test would have given.
      PytestOutcome out;
      out.log_path = server.log_path();
      out.forked = true;
      if (server.stalled()) {
        out.ending = PytestEnding::kStalled;
      } else if (WIFSIGNALED(*server.status())) {
        out.ending = PytestEnding::kSignaled;
        out.signal = WTERMSIG(*server.status());
      } else {
        out.exit_code = WEXITSTATUS(*server.status());
      }
      return out;
    }
    if (child) {
      PytestOutcome out = watch(*child, req, events, log_path, on_result, stop);
      out.forked = true;
      out.server_died = server.ended();
      // A child that never got as far as reporting its tests failed for a reason of the fork's
      // own (the file collected fine in the server): this file spawns from now on.
      if (out.collected || out.ending == PytestEnding::kInterrupted) return out;
      std::string fork_log = req.work_dir + "/pytest.fork.log";
      std::error_code ignored;  // a child that died at once wrote no log
      fs::rename(log_path, fork_log, ignored);
      fs::remove(events, ignored);
      server.give_up(fmt::format("a forked child ended ({}) before reporting its tests; see {}",
                                 out.ending == PytestEnding::kSignaled ? signal_name(out.signal)
                                 : out.ending == PytestEnding::kExited
                                     ? fmt::format("exit code {}", out.exit_code)
                                     : std::string("stalled"),
                                 fork_log));
    }
    if (server.failed())
      std::ofstream(log_path, std::ios::app)
          << "ootci: not forked (" << server.failure() << "); this attempt spawns pytest\n";
  }

  SpawnOptions spawn;
  spawn.argv = req.command;
  spawn.env = req.env;
  for (const auto& [k, v] : attempt_env) spawn.env[k] = v;
  spawn.output_file = log_path;
  spawn.cwd = req.cwd;
  spawn.die_with_parent = true;
  Subprocess proc = Subprocess::spawn(spawn);
  return watch(proc, req, events, log_path, on_result, stop);
}

}  // namespace ootci
