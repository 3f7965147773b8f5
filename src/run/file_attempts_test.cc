#include "run/file_attempts.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <deque>

namespace ootci {
namespace {

const std::string kA = "test/t.py::T::test_a";
const std::string kB = "test/t.py::T::test_b";
const std::string kC = "test/t.py::T::test_c";

TestResult reported(const std::string& id, Outcome outcome) {
  TestResult r;
  split_test_id(id, r);
  r.outcome = outcome;
  return r;
}

// One scripted attempt: how its process ends, and what it reports on the way.
struct Script {
  PytestOutcome ending;
  std::vector<TestResult> reports;
};

// Answers each attempt with the next script, and keeps what every attempt was asked to run.
class ScriptedFile {
 public:
  explicit ScriptedFile(std::deque<Script> scripts) : scripts_(std::move(scripts)) {}

  std::vector<TestResult> run(int reruns = 0, const std::atomic<bool>* stop = nullptr) {
    PlanFile file{"/suite/test/t.py", "test/t.py", std::nullopt, std::nullopt};
    std::vector<TestResult> recorded;
    FileAttemptsOptions options;
    options.reruns = reruns;
    options.stop = stop;
    FileAttempts attempts(
        file, {},
        [&](const AttemptTests& tests, const ResultSink& on_result) {
          asked.push_back(tests);
          if (scripts_.empty()) {
            ADD_FAILURE() << "an attempt beyond the script";
            return PytestOutcome{};
          }
          Script s = std::move(scripts_.front());
          scripts_.pop_front();
          for (const auto& r : s.reports) on_result(r);
          s.ending.results = s.reports;
          return s.ending;
        },
        [&](const TestResult& r) { recorded.push_back(r); }, options);
    attempts.run();
    EXPECT_TRUE(scripts_.empty()) << scripts_.size() << " scripted attempts never started";
    return recorded;
  }

  std::vector<AttemptTests> asked;

 private:
  std::deque<Script> scripts_;
};

PytestOutcome collected(std::vector<std::string> ids) {
  PytestOutcome out;
  out.collected = std::move(ids);
  return out;
}

// The process died in `id` after `before` had started.
PytestOutcome died_in(PytestOutcome out, const std::string& id, int sig,
                      const std::vector<std::string>& before) {
  out.ending = PytestEnding::kSignaled;
  out.signal = sig;
  out.in_progress = id;
  for (const auto& b : before) out.started[b] = reported(b, Outcome::kPassed);
  out.started[id] = reported(id, Outcome::kPassed);
  return out;
}

// A crash after other tests leads the rest into the next process; when it does not repeat
// there, the test keeps its own outcome and the message says what happened.
TEST(FileAttempts, ACrashAfterOtherTestsThatDoesNotRepeatAloneKeepsTheTestsOwnOutcome) {
  ScriptedFile file({
      {died_in(collected({kA, kB, kC}), kB, SIGSEGV, {kA}), {reported(kA, Outcome::kPassed)}},
      {PytestOutcome{}, {reported(kB, Outcome::kPassed), reported(kC, Outcome::kPassed)}},
  });
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].test_id, kB);
  EXPECT_EQ(got[1].outcome, Outcome::kPassed);
  EXPECT_NE(got[1].message.find("crashed the process (SIGSEGV) after other tests, but not when "
                                "run alone"),
            std::string::npos)
      << got[1].message;
  ASSERT_EQ(file.asked.size(), 2u);
  EXPECT_FALSE(file.asked[0].only.has_value());
  EXPECT_EQ(file.asked[1].only, (std::vector<std::string>{kB, kC}));
  EXPECT_EQ(file.asked[1].skip, std::set<std::string>{kA});
}

// A crash that repeats when the test runs first in a fresh process is the test's own; the rest
// of the file then runs without it.
TEST(FileAttempts, ACrashThatRepeatsAloneIsTheTestsErrorAndTheRestRunsOn) {
  ScriptedFile file({
      {died_in(collected({kA, kB, kC}), kB, SIGSEGV, {kA}), {reported(kA, Outcome::kPassed)}},
      {died_in(PytestOutcome{}, kB, SIGABRT, {}), {}},
      {PytestOutcome{}, {reported(kC, Outcome::kFailed)}},
  });
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].test_id, kB);
  EXPECT_EQ(got[1].outcome, Outcome::kError);
  EXPECT_EQ(got[1].error_class, "SIGABRT");  // the death alone names the crash
  EXPECT_NE(got[1].message.find("also when run alone"), std::string::npos) << got[1].message;
  EXPECT_EQ(got[2].test_id, kC);
  ASSERT_EQ(file.asked.size(), 3u);
  EXPECT_EQ(file.asked[2].only, (std::vector<std::string>{kC}));
}

// A helper (a device daemon) that dies under a test: the test runs alone; a death that repeats
// is a HelperDied error naming both deaths.
TEST(FileAttempts, AHelperDeathThatRepeatsAloneIsAHelperDiedError) {
  PytestOutcome first = collected({kA, kB});
  first.ending = PytestEnding::kHelperDied;
  first.killed_test = kA;
  first.helper_death = "the helper pid 7 died from SIGKILL";
  PytestOutcome alone = collected({kA});
  alone.ending = PytestEnding::kHelperDied;
  alone.killed_test = kA;
  ScriptedFile file(
      {{first, {}}, {alone, {}}, {PytestOutcome{}, {reported(kB, Outcome::kPassed)}}});
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].test_id, kA);
  EXPECT_EQ(got[0].error_class, kHelperDiedError);
  EXPECT_NE(got[0].message.find("the helper pid 7 died from SIGKILL; run alone, the same"),
            std::string::npos)
      << got[0].message;
  EXPECT_EQ(file.asked[1].only, (std::vector<std::string>{kA}));
  EXPECT_EQ(file.asked[2].only, (std::vector<std::string>{kB}));
}

// A file that hangs outside its tests gets one retry, then it is one Timeout error.
TEST(FileAttempts, AFileThatStallsTwiceOutsideItsTestsIsOneTimeout) {
  PytestOutcome stalled;
  stalled.ending = PytestEnding::kStalled;
  ScriptedFile file({{stalled, {}}, {stalled, {}}});
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].test_id, "test/t.py");
  EXPECT_EQ(got[0].error_class, kTimeoutError);
  EXPECT_TRUE(got[0].name.empty());  // a whole-file error
  EXPECT_NE(got[0].message.find("twice (after a retry)"), std::string::npos) << got[0].message;
}

// Nothing ran and pytest exited 2: a collection error for the file; exit 5 (no tests) is none.
TEST(FileAttempts, ACollectionErrorIsTheFilesOnlyResult) {
  PytestOutcome error;
  error.exit_code = 2;
  error.collect_errors = {"ImportError: no module named torch_foo"};
  ScriptedFile file({{error, {}}});
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error_class, "CollectionError");
  EXPECT_NE(got[0].message.find("ImportError"), std::string::npos);
  PytestOutcome none;
  none.exit_code = 5;
  EXPECT_TRUE(ScriptedFile({{none, {}}}).run().empty());
}

// A failure runs again; a pass then makes it flaky, a skip proves nothing.
TEST(FileAttempts, ReranFailuresThatPassAreFlakyAndASkipKeepsTheFailure) {
  ScriptedFile file({
      {collected({kA, kB}), {reported(kA, Outcome::kFailed), reported(kB, Outcome::kFailed)}},
      {PytestOutcome{}, {reported(kA, Outcome::kPassed), reported(kB, Outcome::kSkipped)}},
      {PytestOutcome{}, {reported(kB, Outcome::kFailed)}},
  });
  std::vector<TestResult> got = file.run(/*reruns=*/2);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[2].test_id, kA);
  EXPECT_TRUE(got[2].flaky);
  EXPECT_EQ(got[2].reruns, 1);
  EXPECT_EQ(got[3].test_id, kB);
  EXPECT_EQ(got[3].outcome, Outcome::kFailed);  // the skip did not clear it
  EXPECT_EQ(got[4].reruns, 2);
  EXPECT_FALSE(got[4].flaky);
  EXPECT_EQ(file.asked[1].only, (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(file.asked[2].only, (std::vector<std::string>{kB}));
}

// Tests left for a run with every device run one by one, each asked as needing every device.
TEST(FileAttempts, TestsNeedingEveryDeviceRunAloneAfterThePass) {
  PytestOutcome first = collected({kA});
  first.multi_device = {kC};
  ScriptedFile file({
      {first, {reported(kA, Outcome::kPassed)}},
      {PytestOutcome{}, {reported(kC, Outcome::kPassed)}},
  });
  std::vector<TestResult> got = file.run();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(file.asked[0].every_device);
  EXPECT_TRUE(file.asked[1].every_device);
  EXPECT_EQ(file.asked[1].only, (std::vector<std::string>{kC}));
}

// A stop: the interrupted attempt is the last, and nothing is invented for the tests left.
TEST(FileAttempts, AStopEndsTheFileWithoutResultsForTheTestsLeft) {
  std::atomic<bool> stop{false};
  PytestOutcome interrupted = collected({kA, kB});
  interrupted.ending = PytestEnding::kInterrupted;
  interrupted.in_progress = kB;
  ScriptedFile file({{interrupted, {reported(kA, Outcome::kFailed)}}});
  stop = true;
  std::vector<TestResult> got = file.run(/*reruns=*/1, &stop);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].test_id, kA);
  EXPECT_EQ(got[0].reruns, 0);  // no rerun after a stop
}

}  // namespace
}  // namespace ootci
