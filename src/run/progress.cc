#include "run/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "base/time.h"

namespace ootci {
namespace {

std::string format_seconds(double s) {
  auto n = static_cast<long>(s + 0.5);
  if (n >= 3600) return fmt::format("{}h{:02}m", n / 3600, n % 3600 / 60);
  if (n >= 60) return fmt::format("{}m{:02}s", n / 60, n % 60);
  return fmt::format("{}s", n);
}

bool in_file(const std::string& test_id, const std::string& relpath) {
  return test_id.size() > relpath.size() + 2 && test_id.compare(0, relpath.size(), relpath) == 0 &&
         test_id.compare(relpath.size(), 2, "::") == 0;
}

}  // namespace

std::optional<double> remaining_seconds(const ProgressSnapshot& s) {
  size_t done_now = s.done > s.done_before ? s.done - s.done_before : 0;
  if (s.unknown_files || done_now == 0) return std::nullopt;
  double workers = std::max(1, s.workers);
  double left = static_cast<double>(s.total > s.done ? s.total - s.done : 0);
  // The average so far: elapsed time per test finished in it, over the tests left.
  double by_average = s.elapsed_s * left / static_cast<double>(done_now);
  if (s.history_total_s <= 0) return by_average;
  double by_history = std::max(0.0, s.history_total_s - s.history_done_s) / workers;
  // Pace: how long the part done in this process took against what the record expected of it.
  double history_done_now = s.history_done_s - s.history_done_before_s;
  if (history_done_now > 0) by_history *= s.elapsed_s / (history_done_now / workers);
  return std::max(by_history, by_average);
}

std::string long_running_text(std::vector<RunningTest> tests, double after_s) {
  std::erase_if(tests, [&](const RunningTest& t) { return t.running_s <= after_s; });
  if (tests.empty()) return "";
  std::sort(tests.begin(), tests.end(),
            [](const RunningTest& a, const RunningTest& b) { return a.running_s > b.running_s; });
  std::string out = " | running:";
  for (size_t i = 0; i < tests.size() && i < 3; ++i)
    out += fmt::format("{} {} {} (limit {})", i ? "," : "", tests[i].id,
                       format_seconds(tests[i].running_s), format_seconds(tests[i].limit_s));
  if (tests.size() > 3) out += fmt::format(", +{} more", tests.size() - 3);
  return out;
}

void Progress::running(const std::string& test_id, int limit_s, bool running) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running)
    running_[test_id] = {steady_us(), limit_s};
  else
    running_.erase(test_id);
}

Progress::Progress(bool tty, std::map<std::string, double> test_durations, int workers)
    : tty_(tty), workers_(std::max(1, workers)), history_(std::move(test_durations)) {}

Progress::~Progress() {
  stop();
}

void Progress::expect_from_history(const std::string& relpath) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (auto it = history_.lower_bound(relpath + "::"); it != history_.end(); ++it) {
    if (!in_file(it->first, relpath)) break;
    ++n;
    history_total_s_ += it->second;
  }
  expected_[relpath] = n;
  if (n == 0) unknown_.insert(relpath);
}

void Progress::expect(const std::string& relpath, size_t tests, int part, int parts) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& collected = parts_[relpath];
  collected[part] = tests;
  size_t sum = 0;
  for (const auto& [k, n] : collected) sum += n;
  // A resumed run's processes collect only what is left; the finished tests still count.
  sum += already_[relpath];
  if (static_cast<int>(collected.size()) < std::max(parts, 1)) {
    // Some parts are still collecting: the record's size, if larger, is the better guess.
    expected_[relpath] = std::max(expected_[relpath], sum);
    return;
  }
  expected_[relpath] = sum;
  unknown_.erase(relpath);
}

void Progress::add(const TestResult& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!outcomes_.count(r.test_id)) {
    auto h = history_.find(r.test_id);
    if (h != history_.end()) history_done_s_ += h->second;
  }
  outcomes_[r.test_id] = r.outcome;
  flaky_[r.test_id] = r.flaky;
}

void Progress::add_finished(const std::vector<TestResult>& results) {
  for (const auto& r : results) {
    add(r);
    std::lock_guard<std::mutex> lock(mutex_);
    ++already_[r.file];
  }
  // Called before the run starts: everything counted so far was finished by an earlier process.
  std::lock_guard<std::mutex> lock(mutex_);
  done_before_ = outcomes_.size();
  history_done_before_s_ = history_done_s_;
}

std::string Progress::line() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& [file, n] : expected_) total += n;
  std::map<Outcome, size_t> counts;
  size_t flaky = 0;
  for (const auto& [id, outcome] : outcomes_) ++counts[outcome];
  for (const auto& [id, f] : flaky_) flaky += f;
  size_t done = outcomes_.size();
  total = std::max(total, done);
  double elapsed = (steady_us() - started_us_) / 1e6;
  // Files nobody has run yet make the total a lower bound and the ETA a guess not worth showing.
  ProgressSnapshot snapshot{elapsed,
                            done,
                            total,
                            history_total_s_,
                            history_done_s_,
                            workers_,
                            !unknown_.empty(),
                            done_before_,
                            history_done_before_s_};
  std::optional<double> left = remaining_seconds(snapshot);
  std::string eta = !unknown_.empty() ? "? (first run)"
                    : !left           ? "?"
                    : done >= total   ? "finishing (reruns)"
                                      : format_seconds(*left);
  std::vector<RunningTest> running;
  for (const auto& [id, started] : running_)
    running.push_back({id, (steady_us() - started.first) / 1e6, started.second});
  return fmt::format(
      "[{}/{}{}] {} passed, {} failed, {} error, {} xfailed, {} xpassed, {} skipped, {} flaky | "
      "{} elapsed, ETA {}{}",
      done, total, unknown_.empty() ? "" : "+", counts[Outcome::kPassed], counts[Outcome::kFailed],
      counts[Outcome::kError], counts[Outcome::kXfailed], counts[Outcome::kXpassed],
      counts[Outcome::kSkipped], flaky, format_seconds(elapsed), eta, long_running_text(running));
}

void Progress::file_finished(const std::string& relpath, double seconds) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, size_t> counts;  // by outcome name, the order the line lists them
    for (auto it = outcomes_.lower_bound(relpath + "::"); it != outcomes_.end(); ++it) {
      if (!in_file(it->first, relpath)) break;
      ++counts[to_string(it->second)];
    }
    auto whole_file = outcomes_.find(relpath);  // a whole-file error has the relpath as its id
    if (whole_file != outcomes_.end()) ++counts[to_string(whole_file->second)];
    std::string parts;
    for (const auto& [outcome, n] : counts)
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, outcome);
    text = fmt::format("done {} in {}: {}", relpath, format_seconds(seconds),
                       parts.empty() ? "no results" : parts);
  }
  std::cerr << (tty_ ? "\r\033[K" : "") << text << "\n";
}

void Progress::start() {
  started_us_ = steady_us();
  thread_ = std::thread([this] { loop(); });
}

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::cerr << (tty_ ? "\r\033[K" : "") << line() << "\n";
}

void Progress::loop() {
  // A terminal gets a redrawn line twice a second; a log gets one line every 30 s (and a line
  // per finished file), so a long run's log stays readable.
  auto period = std::chrono::milliseconds(tty_ ? 500 : 30000);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    std::string text = line();
    if (tty_)
      std::cerr << "\r\033[K" << text << std::flush;
    else
      std::cerr << text << "\n";
    lock.lock();
  }
}

}  // namespace ootci
