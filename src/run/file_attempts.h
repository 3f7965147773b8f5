#pragma once
// One test file's attempts: the first pass, where crashes, hangs and dead helpers are isolated so
// that every test ends with a result, then the reruns of its failures (docs/run.md). It starts no
// process itself: an attempt is a callable, which the runner answers with a pytest process and
// tests answer with scripted outcomes.
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evidence/test_result.h"
#include "run/pytest_process.h"

namespace ootci {

// A plan's file as a run covers it.
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

// What one attempt runs.
struct AttemptTests {
  std::optional<std::vector<std::string>> only;        // nullopt: every test of the file
  std::set<std::string> skip;                          // settled already
  std::optional<std::vector<std::string>> only_bases;  // PytestRequest::only_bases
  // Every test of `only` needs every device of a pool (run.devices): it runs alone with them.
  bool every_device = false;
};

using ResultSink = std::function<void(const TestResult&)>;
// Runs one attempt to its end; `on_result` sees each result as the process reports it.
using StartAttempt =
    std::function<PytestOutcome(const AttemptTests& tests, const ResultSink& on_result)>;

struct FileAttemptsOptions {
  int reruns = 0;             // run.reruns: rounds of reruns for the failures
  int stall_timeout_s = 300;  // run.stall_timeout_s, named when a file hangs outside its tests
  const std::atomic<bool>* stop = nullptr;  // set: no new attempt starts
};

// A failure worth running again: not a confirmed crash or timeout, not a strict xfail that passed
// (which is deterministic news, not noise), not a whole-file error.
bool rerunnable(const TestResult& r);

// A result the process could not report itself: an error of `id` with the test's mode, op and
// dtype when it was seen starting (`started`, or null), so an xfail test that crashes is judged
// as xfail.
TestResult unreported_result(const std::string& id, const std::string& error_class,
                             const std::string& message, const TestResult* started = nullptr,
                             double seconds = 0);

class FileAttempts {
 public:
  // `settled`: tests with a result already (a resumed run's). `record` gets every result this
  // file ends with, in order, reruns included.
  FileAttempts(const PlanFile& file, std::set<std::string> settled, StartAttempt start,
               ResultSink record, FileAttemptsOptions options);

  // Told the number of tests the file has, once the first attempt collected them.
  std::function<void(size_t tests)> on_collected;

  // The first pass, then the tests left for a run with every device, then the reruns. Returns at
  // once when a stop comes in.
  void run();

 private:
  // A test that crashed its process after other tests is not judged yet: it leads the rest of
  // the file into the next process, so it runs there alone, as a fresh process would run it,
  // and if it survives, the rest follows it in that process instead of in one more.
  struct Suspect {
    std::string id;
    int signal;
    double seconds;
  };
  // The first pass between two attempts: what the next one runs, and what the pass has seen.
  struct FirstPass {
    std::optional<std::vector<std::string>> only;  // the next attempt's tests (nullopt: all)
    bool stall_retried = false;
    int attempts_without_progress = 0;
    std::optional<Suspect> suspect;
  };
  // What finish_attempt decides: another attempt, the end of the first pass, or a stop.
  enum class Step { kAgain, kFileDone, kInterrupted };

  bool stopping() const { return options_.stop && *options_.stop; }
  PytestOutcome attempt(std::optional<std::vector<std::string>> only,
                        const std::set<std::string>& skip, const ResultSink& on_result,
                        std::optional<std::vector<std::string>> only_bases = std::nullopt);
  TestResult error_result(const std::string& id, const std::string& error_class,
                          const std::string& message, double seconds = 0) const;
  void keep(const TestResult& r);
  void note_started(const PytestOutcome& out);

  PytestOutcome start_attempt(const FirstPass& pass);
  Step finish_attempt(FirstPass& pass, const PytestOutcome& out);
  Step settle_ending(FirstPass& pass, const PytestOutcome& out);
  Step plan_rest(FirstPass& pass, const PytestOutcome& out);
  void confirm_crash(const std::string& id, int sig, double seconds,
                     const PytestOutcome* first = nullptr);
  void confirm_helper_death(const PytestOutcome& out);
  void run_one_by_one(const std::vector<std::string>& ids);
  void rerun_failures();

  const PlanFile& file_;
  StartAttempt start_;
  ResultSink record_;
  FileAttemptsOptions options_;
  std::vector<std::string> all_;               // every test of the file this run covers
  std::set<std::string> done_;                 // has a result in this run
  std::map<std::string, TestResult> started_;  // mode/op/dtype of tests seen starting
  std::vector<TestResult> results_;            // this pass's results, for reruns
  std::set<std::string> multi_device_;         // tests that run alone with every device
};

}  // namespace ootci
