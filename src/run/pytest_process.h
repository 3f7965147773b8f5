#pragma once
// One pytest process over (part of) one upstream test file, watched while it runs: its results
// stream in through python/ootci_torch/run_reporter.py, and a stall or an overlong test kills it.
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "run/fork_server.h"
#include "run/test_limits.h"

namespace ootci {

struct PytestRequest {
  std::vector<std::string> command;  // e.g. {python, "-m", "pytest", <file>, args...}
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string work_dir;                          // events, id lists and log go here
  std::optional<std::vector<std::string>> only;  // run just these test ids
  // Also run (with `only`: the union; alone: just) the variants of these relpath::Class::method.
  std::optional<std::vector<std::string>> only_bases;
  std::set<std::string> skip;  // never run these (already finished)
  int stall_timeout_s = 300;
  int test_timeout_s = 900;  // each test's limit, unless limit_of gives one
  // A test still running this long after a process its test process started died unsuccessfully,
  // unreaped (a device daemon it waits on: run/process_tree.h), is killed; 0: never.
  int dead_helper_grace_s = 10;
  std::function<TestLimit(const std::string& test_id)> limit_of;
  // Told when a test starts (running: true, with its limit) and when it stops running.
  std::function<void(const std::string& test_id, int limit_s, bool running)> on_running;
  // Fork the process from this file's server instead of spawning one (run.isolation: fork);
  // when the server cannot serve, the process is spawned and its log says why.
  ForkServer* fork_server = nullptr;
};

enum class PytestEnding {
  kExited,       // exit_code is pytest's
  kSignaled,     // died from signal `signal` (crash, OOM kill)
  kStalled,      // no output for stall_timeout_s; killed
  kTestTimeout,  // the test in progress ran longer than test_timeout_s; killed
  kHelperDied,   // a process the test process started died and the test went on waiting; killed
  kInterrupted,  // `stop` was set; killed
};

struct PytestOutcome {
  PytestEnding ending = PytestEnding::kExited;
  int exit_code = 0;
  int signal = 0;
  std::optional<std::vector<std::string>> collected;  // ids the process was going to run
  // Tests it left for a run with every device of the pool (OOTCI_RUN_MULTI_DEVICE=defer).
  std::vector<std::string> multi_device;
  std::vector<TestResult> results;         // in the order they finished
  std::optional<std::string> in_progress;  // started but never finished
  double in_progress_s = 0;                // how long it had been running
  std::string killed_test;   // the test a test_timeout was for (another may have started since)
  TestLimit killed_limit;    // and the limit it ran past
  std::string helper_death;  // helper_died: which process died, how, and how long the test waited
  // Mode, op and dtype of every test that started, for results the process could not report.
  std::map<std::string, TestResult> started;
  // The process died after a test's call phase (in teardown or a class/module finalizer); that
  // test's call outcome is in `results`, and no test is to blame for the death.
  bool died_after_call = false;
  int bad_events = 0;  // event lines that were not JSON objects
  std::vector<std::string> collect_errors;
  std::string log_path;  // the process's stdout and stderr
  bool forked = false;   // by a fork server
  // Its fork server died while it ran, and took it along: the ending is not the tests' doing.
  bool server_died = false;
};

// "relpath::Class::name" -> file, class, name.
void split_test_id(const std::string& id, TestResult& into);

// Runs the process to its end. `on_result` sees each result as soon as it is reported.
PytestOutcome run_pytest(const PytestRequest& request,
                         const std::function<void(const TestResult&)>& on_result,
                         const std::atomic<bool>& stop);

std::string signal_name(int sig);

}  // namespace ootci
