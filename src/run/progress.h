#pragma once
// The run's progress on stderr: a live line on a terminal; otherwise a plain line at most every
// 30 s and one per finished file. The ETA is the expected time of what remains.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "evidence/test_result.h"

namespace ootci {

// What the ETA is made of, at one moment of a run.
struct ProgressSnapshot {
  double elapsed_s = 0;
  size_t done = 0, total = 0;  // tests with a result, tests expected
  // Recorded durations (earlier runs) of every expected test, and of those done so far.
  double history_total_s = 0, history_done_s = 0;
  int workers = 1;
  bool unknown_files = false;  // files never run before, not collected yet
  // Of `done` and `history_done_s`, what a resumed run had finished before this process started:
  // `elapsed_s` is this process's time, so the pace is taken from the rest alone.
  size_t done_before = 0;
  double history_done_before_s = 0;
};

// Seconds left, or nullopt when there is nothing to go on. Recorded durations say what remains;
// the pace so far scales them (crashes, reruns and process starts are not in the record), and
// the average time per finished test is a floor, so the ETA does not say seconds for minutes.
std::optional<double> remaining_seconds(const ProgressSnapshot& s);

// A test that has been running for a while, as the progress line names it.
struct RunningTest {
  std::string id;
  double running_s = 0;
  int limit_s = 0;
};

// " | running: ID 2m10s (limit 5m00s), ..." for the tests running longer than `after_s`, the
// longest first (three at most, then "+N more"); "" when there are none.
std::string long_running_text(std::vector<RunningTest> tests, double after_s = 60);

class Progress {
 public:
  Progress(bool tty, std::map<std::string, double> test_durations, int workers);
  ~Progress();

  // Until a file's tests are collected, its size is what earlier runs saw.
  void expect_from_history(const std::string& relpath);
  // Part `part` of `parts` of the file collected `tests` (0 of 0: the whole file). Workers that
  // share a file each collect their part; the file's size is known once every part has.
  void expect(const std::string& relpath, size_t tests, int part = 0, int parts = 0);
  // Counts a result; a rerun of the same test replaces its earlier outcome.
  void add(const TestResult& result);
  // A test started running in some worker (running: true, with its limit), or stopped.
  void running(const std::string& test_id, int limit_s, bool running);
  // Tests a resumed run finished before; called before start() and before any add().
  void add_finished(const std::vector<TestResult>& results);
  // A file is through (with its reruns): one line with its counts, also when not on a terminal.
  void file_finished(const std::string& relpath, double seconds);

  void start();
  void stop();
  std::string line();  // the current progress text

 private:
  void loop();

  bool tty_;
  int workers_;
  std::map<std::string, double> history_;
  std::mutex mutex_;
  std::map<std::string, size_t> expected_;              // relpath -> tests
  std::set<std::string> unknown_;                       // files with no history, not yet collected
  std::map<std::string, std::map<int, size_t>> parts_;  // relpath -> part -> tests collected
  std::map<std::string, size_t> already_;    // relpath -> tests a resumed run had finished
  std::map<std::string, Outcome> outcomes_;  // test id -> latest outcome
  std::map<std::string, bool> flaky_;
  std::map<std::string, std::pair<int64_t, int>> running_;  // test id -> (started µs, limit s)
  double history_total_s_ = 0, history_done_s_ = 0;
  size_t done_before_ = 0;  // results a resumed run had settled, and their recorded seconds
  double history_done_before_s_ = 0;
  int64_t started_us_ = 0;
  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace ootci
