#include "evidence/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/text.h"

namespace ootci {
namespace {

// Modes the judge must hold to success: mandatory_success, and a mode it does not know.
bool must_succeed(std::optional<TestMode> mode) {
  return mode != TestMode::kXfail && mode != TestMode::kXfailStrict && mode != TestMode::kSkip;
}

bool strict_xfail_passed(const TestResult& r) {
  return r.mode == TestMode::kXfailStrict &&
         (is_pass(r.outcome) ||
          (r.outcome == Outcome::kFailed && r.error_class == kStrictXpassError));
}

// "RuntimeError: boom" from error_class and message, without repeating the class.
std::string detail(const FailingTest& f) {
  std::string message = first_line(f.message, 120);
  if (f.error_class.empty() || message.find(f.error_class) != std::string::npos) return message;
  if (message.empty()) return f.error_class;
  return f.error_class + ": " + message;
}

std::string mode_row_name(std::optional<TestMode> mode) {
  return mode ? to_string(*mode) : "(unknown)";
}

}  // namespace

Verdict judge(const std::vector<TestResult>& results, const std::vector<TestResult>* last_green) {
  Verdict v;
  std::set<std::string> failing_before;
  if (last_green) {
    v.compared_to_green = true;
    for (const TestResult& r : *last_green)
      if (is_failure(r.outcome)) failing_before.insert(r.test_id);
  }

  size_t ran = 0, mandatory_failed = 0, strict_passed = 0;
  for (const TestResult& r : results) {
    ++v.counts[{r.mode, r.outcome}];
    if (r.outcome != Outcome::kSkipped) ++ran;
    if (r.flaky) v.flaky.push_back(r.test_id);
    bool mandatory = must_succeed(r.mode) && is_failure(r.outcome);
    bool strict = strict_xfail_passed(r);
    mandatory_failed += mandatory;
    strict_passed += strict;
    if (mandatory || strict)
      v.failing.push_back({r.test_id, r.mode, r.outcome, r.error_class, r.message,
                           last_green && !failing_before.count(r.test_id)});
  }

  if (ran == 0)
    v.reasons.push_back(results.empty() ? "no test ran: there are no results"
                                        : "no test ran: every result is skipped");
  if (mandatory_failed)
    v.reasons.push_back(fmt::format("{} of mode mandatory_success (or unknown) failed or errored",
                                    plural(mandatory_failed, "variant")));
  if (strict_passed)
    v.reasons.push_back(
        fmt::format("{} of mode xfail_strict passed", plural(strict_passed, "variant")));
  v.conclusion = v.reasons.empty() ? Conclusion::kSuccess : Conclusion::kFailure;

  std::sort(v.failing.begin(), v.failing.end(), [](const FailingTest& a, const FailingTest& b) {
    if (a.newly != b.newly) return a.newly;
    return a.test_id < b.test_id;
  });
  std::sort(v.flaky.begin(), v.flaky.end());
  return v;
}

std::string format_verdict(const Verdict& v) {
  std::string out = fmt::format("verdict: {}\n", to_string(v.conclusion));
  for (const auto& r : v.reasons) out += fmt::format("  {}\n", r);

  // Rows: the modes present, in their order, unknown last; columns: every outcome, then total.
  std::set<std::optional<TestMode>> present;
  for (const auto& [key, n] : v.counts) present.insert(key.first);
  std::vector<std::optional<TestMode>> rows;
  for (TestMode m : kTestModes)
    if (present.count(m)) rows.push_back(m);
  if (present.count(std::nullopt)) rows.push_back(std::nullopt);
  std::vector<std::string> cols;
  for (Outcome o : kOutcomes) cols.push_back(to_string(o));
  cols.push_back("total");
  size_t name_width = 5;  // "total"
  for (const auto& m : rows) name_width = std::max(name_width, mode_row_name(m).size());

  auto line = [&](const std::string& name, const std::vector<std::string>& cells) {
    std::string s = fmt::format("{:<{}}", name, name_width);
    for (size_t i = 0; i < cells.size(); ++i)
      s += fmt::format("  {:>{}}", cells[i], std::max<size_t>(cols[i].size(), 5));
    return s + "\n";
  };
  out += "\n" + line("mode", cols);
  std::vector<int> column_totals(cols.size(), 0);
  for (const auto& m : rows) {
    std::vector<std::string> cells;
    int total = 0;
    for (size_t i = 0; i < std::size(kOutcomes); ++i) {
      auto it = v.counts.find({m, kOutcomes[i]});
      int n = it == v.counts.end() ? 0 : it->second;
      total += n;
      column_totals[i] += n;
      cells.push_back(std::to_string(n));
    }
    column_totals.back() += total;
    cells.push_back(std::to_string(total));
    out += line(mode_row_name(m), cells);
  }
  std::vector<std::string> totals;
  for (int n : column_totals) totals.push_back(std::to_string(n));
  out += line("total", totals);

  if (!v.failing.empty()) {
    size_t fresh = std::count_if(v.failing.begin(), v.failing.end(),
                                 [](const FailingTest& f) { return f.newly; });
    out += fmt::format("\nfailing ({}; {}):\n", v.failing.size(),
                       v.compared_to_green ? fmt::format("{} new since the last green run", fresh)
                                           : std::string("no green run to compare with"));
    for (const FailingTest& f : v.failing) {
      std::string d = detail(f);
      out += fmt::format("  {:<3}  {:<6}  {}  [{}]{}{}\n", f.newly ? "new" : "",
                         to_string(f.outcome), f.test_id,
                         f.mode ? to_string(*f.mode) : "unknown mode", d.empty() ? "" : "  ", d);
    }
  }
  if (!v.flaky.empty()) {
    out += fmt::format("\nflaky, passed on a rerun ({}):\n", v.flaky.size());
    for (const auto& id : v.flaky) out += fmt::format("  {}\n", id);
  }
  return out;
}

}  // namespace ootci
