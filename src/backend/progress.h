#pragma once
// The run's progress on stderr: a live line on a terminal, a plain line every few seconds
// otherwise, with an ETA from the durations recorded in earlier runs.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "backend/evidence_store.h"

namespace ootci {

class Progress {
 public:
  Progress(bool tty, std::map<std::string, double> test_durations, int workers);
  ~Progress();

  // Until a file's tests are collected, its size is what earlier runs saw.
  void expect_from_history(const std::string& relpath);
  void expect(const std::string& relpath, size_t tests);
  // Counts a result; a rerun of the same test replaces its earlier outcome.
  void add(const TestResult& result);
  // Tests a resumed run finished before.
  void add_finished(const std::vector<TestResult>& results);

  void start();
  void stop();
  std::string line();  // the current progress text

 private:
  void loop();

  bool tty_;
  int workers_;
  std::map<std::string, double> history_;
  std::mutex mutex_;
  std::map<std::string, size_t> expected_;       // relpath -> tests
  std::set<std::string> unknown_;                // files with no history, not yet collected
  std::map<std::string, size_t> already_;        // relpath -> tests a resumed run had finished
  std::map<std::string, std::string> outcomes_;  // test id -> latest outcome
  std::map<std::string, bool> flaky_;
  double history_total_s_ = 0, history_done_s_ = 0;
  int64_t started_us_ = 0;
  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace ootci
