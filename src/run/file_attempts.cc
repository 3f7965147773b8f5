#include "run/file_attempts.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/file_text.h"

namespace ootci {

bool rerunnable(const TestResult& r) {
  return is_failure(r.outcome) && classify(r) == Seen::kFail && !r.name.empty();
}

namespace {

std::string tail_of_file(const std::string& path) {
  return read_file_tail(path, 2000);
}

// The result of a test that crashed its process (`sig`) among other tests but not alone.
TestResult survived_alone(TestResult r, int sig) {
  r.message = fmt::format("crashed the process ({}) after other tests, but not when run alone: {}",
                          signal_name(sig), r.message);
  return r;
}

// How the run alone of `id` ended when the test did not report: what tells a death that repeats
// from a test that hangs alone (no helper died, or none the watcher could see).
std::string alone_ending(const PytestOutcome& again, const std::string& id) {
  if (again.ending == PytestEnding::kHelperDied && again.killed_test == id) return "the same";
  if (again.ending == PytestEnding::kTestTimeout && again.killed_test == id)
    return fmt::format("no helper died, and it ran longer than its limit of {} s ({})",
                       again.killed_limit.seconds, again.killed_limit.why);
  if (again.ending == PytestEnding::kSignaled && again.in_progress == id)
    return fmt::format("the test process died from {}", signal_name(again.signal));
  return "the test did not report either";
}

}  // namespace

FileAttempts::FileAttempts(const PlanFile& file, std::set<std::string> settled, StartAttempt start,
                           ResultSink record, FileAttemptsOptions options)
    : file_(file),
      start_(std::move(start)),
      record_(std::move(record)),
      options_(options),
      done_(std::move(settled)) {}

PytestOutcome FileAttempts::attempt(std::optional<std::vector<std::string>> only,
                                    const std::set<std::string>& skip, const ResultSink& on_result,
                                    std::optional<std::vector<std::string>> only_bases) {
  AttemptTests tests;
  tests.every_device = only && !only->empty() &&
                       std::all_of(only->begin(), only->end(),
                                   [&](const std::string& id) { return multi_device_.count(id); });
  tests.only = std::move(only);
  tests.skip = skip;
  tests.only_bases = std::move(only_bases);
  return start_(tests, on_result);
}

TestResult unreported_result(const std::string& id, const std::string& error_class,
                             const std::string& message, const TestResult* started,
                             double seconds) {
  TestResult r = started ? *started : TestResult{};
  split_test_id(id, r);
  r.outcome = Outcome::kError;
  r.error_class = error_class;
  r.message = message;
  r.duration_s = seconds;
  r.finished_ms = 0;
  return r;
}

TestResult FileAttempts::error_result(const std::string& id, const std::string& error_class,
                                      const std::string& message, double seconds) const {
  auto it = started_.find(id);
  return unreported_result(id, error_class, message, it == started_.end() ? nullptr : &it->second,
                           seconds);
}

void FileAttempts::keep(const TestResult& r) {
  results_.push_back(r);
  done_.insert(r.test_id);
  record_(r);
}

void FileAttempts::note_started(const PytestOutcome& out) {
  for (const auto& [k, v] : out.started) started_.emplace(k, v);
}

// One attempt at a time, as ninja's Builder starts an edge and finishes its command:
// finish_attempt reads how the attempt ended and decides what runs next.
void FileAttempts::run() {
  FirstPass pass;
  pass.only = file_.only;
  for (;;) {
    PytestOutcome out = start_attempt(pass);
    Step next = finish_attempt(pass, out);
    if (next == Step::kInterrupted) return;
    if (next == Step::kFileDone) break;
  }
  if (!stopping() && !multi_device_.empty())
    run_one_by_one({multi_device_.begin(), multi_device_.end()});
  rerun_failures();
}

// One attempt of the first pass; a suspect that reports survived its run alone.
PytestOutcome FileAttempts::start_attempt(const FirstPass& pass) {
  PytestOutcome out = attempt(
      pass.only, done_,
      [&](const TestResult& r) {
        bool survivor = pass.suspect && r.test_id == pass.suspect->id;
        keep(survivor ? survived_alone(r, pass.suspect->signal) : r);
      },
      all_.empty() ? file_.bases : std::nullopt);
  note_started(out);
  multi_device_.insert(out.multi_device.begin(), out.multi_device.end());
  if (out.collected && all_.empty()) {
    all_ = *out.collected;
    if (on_collected) on_collected(all_.size() + multi_device_.size());
  }
  return out;
}

FileAttempts::Step FileAttempts::finish_attempt(FirstPass& pass, const PytestOutcome& out) {
  if (out.ending == PytestEnding::kInterrupted) return Step::kInterrupted;
  bool exited = out.ending == PytestEnding::kExited;
  if (exited && !out.in_progress && out.results.empty() && all_.empty()) {
    // Nothing ran: an import or collection error (pytest exits 2), or no tests (5).
    if (out.exit_code != 5 && out.exit_code != 0)
      keep(error_result(file_.relpath, "CollectionError",
                        fmt::format("pytest exited {} before running a test\n{}", out.exit_code,
                                    out.collect_errors.empty() ? tail_of_file(out.log_path)
                                                               : out.collect_errors.front())));
    return Step::kFileDone;
  }
  if (settle_ending(pass, out) == Step::kFileDone) return Step::kFileDone;
  return plan_rest(pass, out);
}

// Records what the attempt's ending says about the test it stopped in (or about the file);
// file_done when that ends the file's first pass.
FileAttempts::Step FileAttempts::settle_ending(FirstPass& pass, const PytestOutcome& out) {
  bool exited = out.ending == PytestEnding::kExited;
  std::optional<Suspect> judged = std::exchange(pass.suspect, std::nullopt);
  if (judged && !done_.count(judged->id)) {
    // It ran first and did not report: this attempt was its run alone.
    confirm_crash(judged->id, judged->signal, judged->seconds, &out);
  } else if (out.ending == PytestEnding::kTestTimeout) {
    keep(error_result(out.killed_test, std::string(kTimeoutError),
                      fmt::format("ran longer than its limit of {} s ({})",
                                  out.killed_limit.seconds, out.killed_limit.why),
                      out.in_progress_s));
  } else if (out.ending == PytestEnding::kHelperDied) {
    confirm_helper_death(out);
  } else if (out.in_progress && out.ending == PytestEnding::kSignaled) {
    // A death its fork server caused says nothing about the test: it runs alone anyway.
    bool first = out.started.size() == 1 && out.results.empty() && !out.server_died;
    if (first)
      confirm_crash(*out.in_progress, out.signal, out.in_progress_s, &out);
    else if (!all_.empty())
      pass.suspect = Suspect{*out.in_progress, out.signal, out.in_progress_s};
    else
      confirm_crash(*out.in_progress, out.signal, out.in_progress_s);
  } else if (out.in_progress && exited) {
    keep(error_result(*out.in_progress, "ProcessExit",
                      fmt::format("the test process exited with status {} during this test\n{}",
                                  out.exit_code, tail_of_file(out.log_path)),
                      out.in_progress_s));
  } else if (out.ending == PytestEnding::kStalled) {
    if (!pass.stall_retried) {
      pass.stall_retried = true;  // kill and retry the rest once
      return Step::kAgain;
    }
    // Hung twice outside any test (import, collection, teardown): the file is one error.
    keep(error_result(file_.relpath, std::string(kTimeoutError),
                      fmt::format("no output for stall_timeout_s={} outside any test, "
                                  "twice (after a retry)\n{}",
                                  options_.stall_timeout_s, tail_of_file(out.log_path))));
    return Step::kFileDone;
  } else if (!exited) {
    // Died between tests (module setup, or teardown after a test's call phase): nobody to
    // blame, so the death itself is a file-level error and the rest runs one process per
    // test.
    std::string cls = signal_name(out.signal);
    keep(error_result(file_.relpath, cls,
                      fmt::format("the test process died ({}) outside any test's call phase\n{}",
                                  cls, tail_of_file(out.log_path))));
    if (!all_.empty()) run_one_by_one(all_);
    return Step::kFileDone;
  }
  return Step::kAgain;
}

// The tests still without a result go to the next attempt, unless none are left or attempts
// stopped getting anywhere.
FileAttempts::Step FileAttempts::plan_rest(FirstPass& pass, const PytestOutcome& out) {
  std::vector<std::string> rest;
  for (const auto& id : all_)
    if (!done_.count(id)) rest.push_back(id);
  if (rest.empty() && !all_.empty()) return Step::kFileDone;
  // A clean exit that left tests unreported (pytest -x, a lost event line): run the rest,
  // unless a whole attempt got nowhere twice.
  if (out.ending == PytestEnding::kExited && !out.in_progress) {
    pass.attempts_without_progress = out.results.empty() ? pass.attempts_without_progress + 1 : 0;
    if (pass.attempts_without_progress >= 2) {
      for (const auto& id : rest)
        keep(error_result(
            id, "NotReported",
            "pytest ended without reporting this test (twice)\n" + tail_of_file(out.log_path)));
      return Step::kFileDone;
    }
  }
  pass.only = all_.empty() ? file_.only : std::optional<std::vector<std::string>>(rest);
  return Step::kAgain;
}

// The test that was running when its process died from a signal, run again alone: a crash that
// repeats is the test's own; one that does not came from the tests before it.
// `first` is an attempt in which it already ran first (alone): it is not run again.
void FileAttempts::confirm_crash(const std::string& id, int sig, double seconds,
                                 const PytestOutcome* first) {
  std::optional<TestResult> alone;
  PytestOutcome again =
      first ? *first : attempt(std::vector<std::string>{id}, {}, [&](const TestResult& r) {
        if (r.test_id == id) alone = r;
      });
  note_started(again);
  if (again.ending == PytestEnding::kInterrupted) return;
  if (alone) {
    keep(survived_alone(*alone, sig));
    return;
  }
  std::string why;
  std::string cls = signal_name(sig);
  if (again.ending == PytestEnding::kSignaled && again.in_progress == id) {
    cls = signal_name(again.signal);
    why =
        fmt::format("the test process died from {} while this test ran, also when run alone", cls);
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
  keep(error_result(id, cls, why + "\n" + tail_of_file(again.log_path),
                    std::max(seconds, again.in_progress_s)));
}

// The test whose helper process (a device daemon) died while it ran, run again alone unless it
// ran alone already: a death that repeats is the test's own; one that does not came from the
// tests before it or from the daemon's own chance (OpenReg's dies now and then), and the test's
// result is what it did alone. Running first in a process is not enough, unlike for a crash.
void FileAttempts::confirm_helper_death(const PytestOutcome& out) {
  const std::string& id = out.killed_test;
  bool ran_alone = out.collected && out.collected->size() == 1;
  std::optional<TestResult> alone;
  PytestOutcome again =
      ran_alone ? out : attempt(std::vector<std::string>{id}, {}, [&](const TestResult& r) {
        if (r.test_id == id) alone = r;
      });
  note_started(again);
  if (again.ending == PytestEnding::kInterrupted) return;
  if (alone) {
    alone->message =
        fmt::format("{}; run again alone, its helpers lived: {}", out.helper_death, alone->message);
    keep(*alone);
    return;
  }
  std::string why = out.helper_death;
  if (!ran_alone) why += "; run alone, " + alone_ending(again, id);
  keep(error_result(id, std::string(kHelperDiedError), why + "\n" + tail_of_file(again.log_path),
                    out.in_progress_s));
}

// One process per test, so whatever kills a process takes only its own test with it.
void FileAttempts::run_one_by_one(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (done_.count(id) || stopping()) continue;
    PytestOutcome one =
        attempt(std::vector<std::string>{id}, {}, [&](const TestResult& r) { keep(r); });
    note_started(one);
    if (done_.count(id) || one.ending == PytestEnding::kInterrupted) continue;
    std::string cls = one.ending == PytestEnding::kSignaled ? signal_name(one.signal)
                      : one.ending == PytestEnding::kExited ? "NotReported"
                                                            : std::string(kTimeoutError);
    keep(error_result(id, cls, tail_of_file(one.log_path), one.in_progress_s));
  }
}

// Failed tests run again in fresh processes; one that then passes is flaky, not a failure.
void FileAttempts::rerun_failures() {
  std::map<std::string, TestResult> still;  // latest result of each failing test
  for (const auto& r : results_) {
    if (rerunnable(r))
      still[r.test_id] = r;
    else
      still.erase(r.test_id);
  }
  for (int round = 1; round <= options_.reruns && !still.empty(); ++round) {
    if (stopping()) return;
    // Tests that need every device rerun alone, apart from the others.
    std::vector<std::string> shared, alone;
    for (const auto& [id, r] : still) (multi_device_.count(id) ? alone : shared).push_back(id);
    for (const auto* ids : {&shared, &alone}) {
      if (ids->empty()) continue;
      attempt(*ids, {}, [&](const TestResult& again) {
        auto it = still.find(again.test_id);
        if (it == still.end()) return;
        // Only a real pass clears a failure (flaky); a new failure replaces it; a skip or an
        // expected failure on a rerun proves nothing, so the old failure stands.
        TestResult r = is_pass(again.outcome) || is_failure(again.outcome) ? again : it->second;
        r.reruns = round;
        r.flaky = is_pass(again.outcome);
        if (r.flaky)
          still.erase(it);
        else
          it->second = r;
        record_(r);
      });
    }
  }
}

}  // namespace ootci
