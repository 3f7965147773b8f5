#include "select/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"

namespace ootci {
namespace {

// How many results of each test the history looks at.
constexpr int kHistoryWindow = 20;

std::string relpath_of(const std::string& id) {
  return id.substr(0, id.find("::"));
}

// Whether a run covered every plan file whole: not a shard, nor `--select` (its manifest lists
// the files it ran, with their single tests or bases when it ran only those).
bool ran_whole_plan(const RunInfo& r, const std::set<std::string>& plan_files) {
  if (!r.shard.empty() || !r.manifest.is_object()) return false;
  if (!r.manifest.contains("files")) return true;  // written before manifests listed files
  std::set<std::string> covered;
  for (const auto& f : r.manifest["files"]) {
    if (!f.is_object() || f.contains("tests") || f.contains("bases")) return false;
    covered.insert(f.value("relpath", ""));
  }
  return std::includes(covered.begin(), covered.end(), plan_files.begin(), plan_files.end());
}

// The plan's newest finished whole run, if any.
std::optional<RunInfo> newest_plan_run(EvidenceStore& store, const PlanRun& plan_run,
                                       const std::set<std::string>& plan_files) {
  if (plan_run.backend.empty()) return std::nullopt;
  for (const RunInfo& r : store.runs(plan_run.backend))
    if (r.status == RunStatus::kFinished && r.config_hash == plan_run.config_hash &&
        ran_whole_plan(r, plan_files))
      return r;
  return std::nullopt;
}

}  // namespace

size_t items_within_budget(std::vector<BudgetItem>& items, double budget_seconds) {
  std::stable_sort(items.begin(), items.end(), [](const BudgetItem& a, const BudgetItem& b) {
    if (a.evidence != b.evidence) return a.evidence < b.evidence;
    if (a.breakages != b.breakages) return a.breakages > b.breakages;
    if (a.seconds != b.seconds) return a.seconds < b.seconds;
    return a.id < b.id;
  });
  // A prefix, so nothing is kept over stronger evidence that was dropped.
  double used = 0;
  size_t n = 0;
  for (; n < items.size() && used + items[n].seconds <= budget_seconds; ++n)
    used += items[n].seconds;
  return n;
}

void apply_budget(ChangedSelection& s, const std::vector<PlanFileRef>& plan, EvidenceStore& store,
                  double share, const PlanRun& plan_run) {
  std::set<std::string> plan_files;
  for (const auto& f : plan) plan_files.insert(f.relpath);
  std::map<std::string, double> seconds;  // timed tests of the plan
  double plan_seconds = 0;
  std::optional<RunInfo> timed_by = newest_plan_run(store, plan_run, plan_files);
  std::map<std::string, double> durations;
  if (timed_by)
    for (const TestResult& r : store.results(timed_by->id)) durations[r.test_id] = r.duration_s;
  else
    durations = store.test_durations();
  for (const auto& [id, d] : durations) {
    if (!plan_files.count(relpath_of(id))) continue;
    seconds[id] = d;
    plan_seconds += d;
  }
  std::map<std::string, double> file_seconds;
  for (const auto& [id, d] : seconds) file_seconds[relpath_of(id)] += d;
  double mean = seconds.empty() ? 0 : plan_seconds / static_cast<double>(seconds.size());
  std::map<std::string, int> breakages = store.breakages(kHistoryWindow);

  std::vector<BudgetItem> items;
  for (const auto& f : s.files) {
    BudgetItem item{f, s.evidence.count(f) ? s.evidence.at(f) : Evidence::kUnknown, 0,
                    file_seconds.count(f) ? file_seconds.at(f) : 0};
    for (auto it = breakages.lower_bound(f + "::");
         it != breakages.end() && it->first.rfind(f + "::", 0) == 0; ++it)
      item.breakages += it->second;
    items.push_back(item);
  }
  for (const auto& t : s.tests) {
    if (s.files.count(relpath_of(t))) continue;  // its file runs whole anyway
    auto d = seconds.find(t);
    auto b = breakages.find(t);
    // Not in the plan's run: the plan does not run it (no cost); no run: an average test.
    double cost = d != seconds.end() ? d->second : timed_by ? 0 : mean;
    items.push_back({t, s.evidence.count(t) ? s.evidence.at(t) : Evidence::kUnknown,
                     b == breakages.end() ? 0 : b->second, cost});
  }
  double budget_seconds = share * plan_seconds;
  size_t kept = items_within_budget(items, budget_seconds);

  struct Side {
    size_t tests = 0, files = 0;
    double seconds = 0;
    int breakages = 0;
    std::map<std::string, size_t> by_evidence;
  } keep, drop;
  for (size_t i = 0; i < items.size(); ++i) {
    const BudgetItem& item = items[i];
    bool file = s.files.count(item.id) > 0;
    Side& side = i < kept ? keep : drop;
    (file ? side.files : side.tests) += 1;
    side.seconds += item.seconds;
    side.breakages += item.breakages;
    ++side.by_evidence[to_string(item.evidence)];
    if (i < kept) continue;
    s.dropped.insert(item.id);
    (file ? s.files : s.tests).erase(item.id);
    s.reasons.erase(item.id);
  }
  auto side_json = [](const Side& side) {
    return nlohmann::json{{"tests", side.tests},
                          {"files", side.files},
                          {"seconds", side.seconds},
                          {"breakages", side.breakages},
                          {"by_evidence", side.by_evidence}};
  };
  int seen = keep.breakages + drop.breakages;
  s.summary["budget"] = {
      {"share", share},
      {"timed_by", timed_by ? nlohmann::json(timed_by->id) : nullptr},
      {"plan_seconds", plan_seconds},
      {"budget_seconds", budget_seconds},
      {"kept", side_json(keep)},
      {"dropped", side_json(drop)},
      {"history_window", kHistoryWindow},
      // Of the breakages the selected tests caught before, the share the dropped ones caught.
      {"recall_at_risk", seen ? nlohmann::json(double(drop.breakages) / seen) : nullptr}};
  s.summary["selected_files"] = s.files.size();
  s.summary["selected_tests"] = s.tests.size();
}

double parse_budget(const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !(value > 0 && value <= 100))
    throw Error(
        fmt::format("--budget {}: expected a share of the full plan's test time "
                    "above 0 and at most 100, such as 10%",
                    text));
  return value / 100;
}

}  // namespace ootci
