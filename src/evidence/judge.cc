#include "evidence/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/text.h"

namespace ootci {
namespace {

const std::vector<std::string> kModes = {"mandatory_success", "xfail", "xfail_strict", "skip"};

// Modes the judge must hold to success: mandatory_success, and anything it does not know.
bool must_succeed(const std::string& mode) {
  return mode != "xfail" && mode != "xfail_strict" && mode != "skip";
}

bool strict_xfail_passed(const TestResult& r) {
  return r.mode == "xfail_strict" && (r.outcome == "passed" || r.outcome == "xpassed" ||
                                      (r.outcome == "failed" && r.error_class == "XPASS(strict)"));
}

// Rows in a fixed order: the documented modes, any others, then unknown ("").
std::vector<std::string> ordered(const std::set<std::string>& present,
                                 const std::vector<std::string>& known, bool empty_last) {
  std::vector<std::string> out;
  for (const auto& k : known)
    if (present.count(k)) out.push_back(k);
  for (const auto& p : present)
    if (!p.empty() && std::find(known.begin(), known.end(), p) == known.end()) out.push_back(p);
  if (empty_last && present.count("")) out.push_back("");
  return out;
}

std::string first_line(const std::string& s, size_t max_chars) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max_chars) line = line.substr(0, max_chars) + "...";
  return line;
}

// "RuntimeError: boom" from error_class and message, without repeating the class.
std::string detail(const FailingTest& f) {
  std::string message = first_line(f.message, 120);
  if (f.error_class.empty() || message.find(f.error_class) != std::string::npos) return message;
  if (message.empty()) return f.error_class;
  return f.error_class + ": " + message;
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
    if (r.outcome != "skipped") ++ran;
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
  v.conclusion = v.reasons.empty() ? "success" : "failure";

  std::sort(v.failing.begin(), v.failing.end(), [](const FailingTest& a, const FailingTest& b) {
    if (a.newly != b.newly) return a.newly;
    return a.test_id < b.test_id;
  });
  std::sort(v.flaky.begin(), v.flaky.end());
  return v;
}

std::string format_verdict(const Verdict& v) {
  std::string out = fmt::format("verdict: {}\n", v.conclusion);
  for (const auto& r : v.reasons) out += fmt::format("  {}\n", r);

  std::set<std::string> modes, outcomes;
  for (const auto& [key, n] : v.counts) {
    modes.insert(key.first);
    outcomes.insert(key.second);
  }
  for (const auto& o : kOutcomes) outcomes.insert(o);  // the table always has the usual columns
  std::vector<std::string> rows = ordered(modes, kModes, true);
  std::vector<std::string> cols = ordered(outcomes, kOutcomes, false);
  cols.push_back("total");
  auto row_name = [](const std::string& mode) { return mode.empty() ? "(unknown)" : mode; };
  size_t name_width = 5;  // "total"
  for (const auto& m : rows) name_width = std::max(name_width, row_name(m).size());

  auto line = [&](const std::string& name, const std::vector<std::string>& cells) {
    std::string s = fmt::format("{:<{}}", name, name_width);
    for (size_t i = 0; i < cells.size(); ++i)
      s += fmt::format("  {:>{}}", cells[i], std::max<size_t>(cols[i].size(), 5));
    return s + "\n";
  };
  out += "\n" + line("mode", cols);
  std::map<std::string, int> column_totals;
  for (const auto& m : rows) {
    std::vector<std::string> cells;
    int total = 0;
    for (size_t i = 0; i + 1 < cols.size(); ++i) {
      auto it = v.counts.find({m, cols[i]});
      int n = it == v.counts.end() ? 0 : it->second;
      total += n;
      column_totals[cols[i]] += n;
      cells.push_back(std::to_string(n));
    }
    column_totals["total"] += total;
    cells.push_back(std::to_string(total));
    out += line(row_name(m), cells);
  }
  std::vector<std::string> totals;
  for (const auto& c : cols) totals.push_back(std::to_string(column_totals[c]));
  out += line("total", totals);

  if (!v.failing.empty()) {
    size_t fresh = std::count_if(v.failing.begin(), v.failing.end(),
                                 [](const FailingTest& f) { return f.newly; });
    out += fmt::format("\nfailing ({}; {}):\n", v.failing.size(),
                       v.compared_to_green ? fmt::format("{} new since the last green run", fresh)
                                           : std::string("no green run to compare with"));
    for (const FailingTest& f : v.failing) {
      std::string d = detail(f);
      out +=
          fmt::format("  {:<3}  {:<6}  {}  [{}]{}{}\n", f.newly ? "new" : "", f.outcome, f.test_id,
                      f.mode.empty() ? "unknown mode" : f.mode, d.empty() ? "" : "  ", d);
    }
  }
  if (!v.flaky.empty()) {
    out += fmt::format("\nflaky, passed on a rerun ({}):\n", v.flaky.size());
    for (const auto& id : v.flaky) out += fmt::format("  {}\n", id);
  }
  return out;
}

bool is_failure(const std::string& outcome) {
  return outcome == "failed" || outcome == "error";
}

std::optional<RunInfo> last_green_before(EvidenceStore& store, const RunInfo& run) {
  std::optional<RunInfo> green = store.last_green_run(run.backend, run.config_hash);
  if (!green || green->id != run.id) return green;
  for (const RunInfo& r : store.runs(run.backend))  // newest first
    if (r.id != run.id && r.config_hash == run.config_hash && r.status == "finished" &&
        r.verdict == "success")
      return r;
  return std::nullopt;
}

}  // namespace ootci
