#include "hud/hud_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "relay/nightly_freshness.h"
#include "relay_store/hud_rollup.h"

namespace ootci {
namespace {

constexpr int64_t kDayMs = 86400000;
constexpr int64_t kHourMs = 3600000;

nlohmann::json round1(double v) {
  return std::round(v * 10) / 10;
}
nlohmann::json minutes(int64_t sum_ms, int64_t n) {
  return n > 0 ? round1(double(sum_ms) / n / 60000.0) : nlohmann::json(nullptr);
}
nlohmann::json percent(int64_t part, int64_t whole) {
  return whole > 0 ? round1(100.0 * part / whole) : nlohmann::json(nullptr);
}
nlohmann::json ms_to_min(int64_t ms) {
  return ms >= 0 ? round1(ms / 60000.0) : nlohmann::json(nullptr);
}

int64_t range_ms(const std::string& r) {
  return r == "24h" ? kDayMs : r == "30d" ? 30 * kDayMs : 7 * kDayMs;
}

JobFilter filter_of(const std::string& tab) {
  return tab == "nightly" ? JobFilter::kNightly : JobFilter::kPullRequest;
}

nlohmann::json backend_row(const RepoStats& s, const std::string& level,
                           const std::vector<std::string>& oncalls) {
  int64_t completed = s.jobs - s.in_progress;
  nlohmann::json pass = percent(s.success, completed);
  // Verdict-aware (test-infra#8673): without the failures a confident verdict blames on upstream.
  return {{"repo", s.repo},
          {"level", level},
          {"oncalls", oncalls},
          {"jobs", s.jobs},
          {"success", s.success},
          {"failures", s.failure},
          {"timed_out", s.timed_out},
          {"in_progress", s.in_progress},
          {"prs", s.prs},
          {"pass_rate", pass},
          {"pass_rate_excluding_upstream", percent(s.success, completed - s.failure_upstream)},
          {"upstream_failures", s.failure_upstream},
          {"chip", pass_rate_chip(pass)},
          {"avg_queue_min", minutes(s.queue_sum_ms, s.queue_n)},
          {"avg_exec_min", minutes(s.exec_sum_ms, s.exec_n)}};
}

// A GitHub run id stays the number the API always gave; a Buildkite UUID is a string.
nlohmann::json run_id_json(const std::string& run_id) {
  bool digits = !run_id.empty() && run_id.size() <= 15 &&
                run_id.find_first_not_of("0123456789") == std::string::npos;
  return digits ? nlohmann::json(std::stoll(run_id)) : nlohmann::json(run_id);
}

nlohmann::json job_summary(const JobRecord& j) {
  return {{"key", j.key},
          {"repo", j.repo},
          {"pr", j.pr_number},
          {"event_type", j.event_type},
          {"workflow", j.workflow_name},
          {"job", j.job_name},
          {"column", j.workflow_name + "/" + j.job_name},
          {"run_id", run_id_json(j.run_id)},
          {"run_attempt", j.run_attempt},
          {"status", to_string(j.status)},
          {"conclusion", j.conclusion.text()},
          {"url", j.workflow_url},
          {"head_sha", j.head_sha},
          {"queue_min", ms_to_min(j.queue_time_ms)},
          {"exec_min", ms_to_min(j.execution_time_ms)},
          {"queue_s",
           j.queue_time_ms >= 0 ? nlohmann::json(j.queue_time_ms / 1000.0) : nlohmann::json()},
          {"exec_s", j.execution_time_ms >= 0 ? nlohmann::json(j.execution_time_ms / 1000.0)
                                              : nlohmann::json()},
          {"created_ms", j.created_ms},
          {"has_failed_tests", !j.failed_tests_json.empty()},
          {"has_verdict", !j.triage_json.empty()},
          {"verdict", j.verdict_category.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"category", j.verdict_category},
                                           {"confidence", j.verdict_confidence}}}};
}

nlohmann::json criterion(const char* name, double value, bool pass, const std::string& display,
                         const std::string& target) {
  return nlohmann::json{{"name", name},
                        {"value", value < 0 ? nlohmann::json(nullptr) : round1(value)},
                        {"pass", pass},
                        {"display", display},
                        {"target", target}};
}

std::string no_data_or(double value, const char* format) {
  return value < 0 ? "no data" : fmt::format(fmt::runtime(format), value);
}

// The readiness windows of one repo, each ending now.
struct Windows {
  RepoStats all, d30, d14, d7;
  double p50_h14 = -1;  // end-to-end P50 over 14 days, hours
  double avg_queue_min14() const {
    return d14.queue_n ? double(d14.queue_sum_ms) / d14.queue_n / 60000.0 : -1;
  }
  double overrun14() const { return d14.exec_n ? 100.0 * d14.overruns / d14.exec_n : -1; }
  static double rate(int64_t part, const RepoStats& s) {
    int64_t done = s.jobs - s.in_progress;
    return done ? 100.0 * part / done : -1;
  }
};

// L3 promotion: the level status's criteria (upstream's thresholds, or the operator's).
nlohmann::json promotion_criteria(const LevelStatus& status) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : status.criteria)
    out.push_back({{"name", c.label},
                   {"value", c.measured ? nlohmann::json(*c.measured) : nlohmann::json(nullptr)},
                   {"pass", c.met() == true},
                   {"display", c.measured_text()},
                   {"target", c.target_label}});
  return out;
}

// The operator's L4 criteria, each only when set.
nlohmann::json l4_criteria(Store& store, const std::string& repo, const Windows& w, int64_t now,
                           const L4Criteria& k) {
  nlohmann::json out = nlohmann::json::array();
  if (k.at_l3_days) {
    auto since = store.levels.level_since(repo, "L3");
    double days = since ? double(now - *since) / kDayMs : 0;
    out.push_back(criterion("At L3", days, since && days >= *k.at_l3_days,
                            since ? fmt::format("{:.1f} days", days) : "not at L3",
                            fmt::format(">= {:g} days", *k.at_l3_days)));
  }
  if (k.pass_rate_percent) {
    double pass = Windows::rate(w.d30.success, w.d30);
    out.push_back(criterion("Pass rate (30 days)", pass, pass >= 0 && pass >= *k.pass_rate_percent,
                            no_data_or(pass, "{:.1f}%"),
                            fmt::format(">= {:g}%", *k.pass_rate_percent)));
  }
  if (k.avg_queue_min) {
    double queue = w.avg_queue_min14();
    out.push_back(criterion("Average queue time", queue, queue >= 0 && queue < *k.avg_queue_min,
                            no_data_or(queue, "{:.1f} min"),
                            fmt::format("< {:g} min", *k.avg_queue_min)));
  }
  if (k.e2e_p50_hours)
    out.push_back(
        criterion("End-to-end P50", w.p50_h14, w.p50_h14 >= 0 && w.p50_h14 < *k.e2e_p50_hours,
                  no_data_or(w.p50_h14, "{:.2f} h"), fmt::format("< {:g} h", *k.e2e_p50_hours)));
  if (k.overrun_percent) {
    double overrun = w.overrun14();
    out.push_back(criterion("Jobs over 3 h", overrun, overrun >= 0 && overrun < *k.overrun_percent,
                            no_data_or(overrun, "{:.1f}%"),
                            fmt::format("< {:g}%", *k.overrun_percent)));
  }
  if (k.timeout_rate_percent) {
    double timeout = Windows::rate(w.d7.timed_out, w.d7);
    out.push_back(criterion(
        "Timeout rate (7 days)", timeout, timeout >= 0 && timeout < *k.timeout_rate_percent,
        no_data_or(timeout, "{:.1f}%"), fmt::format("< {:g}%", *k.timeout_rate_percent)));
  }
  return out;
}

// `promotion` is the repo's promotion status (below L3).
nlohmann::json readiness_json(Store& store, const std::string& repo, const std::string& level,
                              int64_t now, const HudSettings& settings,
                              const LevelStatus* promotion) {
  if (level == "L4")
    return {{"target", nullptr},
            {"criteria", nlohmann::json::array()},
            {"ready", false},
            {"note", "At L4, the highest level."}};
  bool at_l3 = level == "L3";
  if (!at_l3) {
    nlohmann::json criteria = promotion_criteria(*promotion);
    bool ready = std::all_of(criteria.begin(), criteria.end(),
                             [](const auto& c) { return c["pass"] == true; });
    return {{"target", "L3"}, {"criteria", criteria}, {"ready", ready}, {"note", ""}};
  }
  auto find = [&](int64_t since, JobFilter f) {
    for (const auto& s : store.jobs.repo_stats(since, f, repo))
      if (s.repo == repo) return s;
    return RepoStats{repo, ""};
  };
  Windows w;
  w.all = find(0, JobFilter::kPullRequest);
  w.d30 = find(now - 30 * kDayMs, JobFilter::kPullRequest);
  w.d14 = find(now - 14 * kDayMs, JobFilter::kPullRequest);
  w.d7 = find(now - 7 * kDayMs, JobFilter::kPullRequest);
  int64_t p50 = percentile_ms(store.jobs.e2e_histogram(repo, now - 14 * kDayMs), 0.5);
  w.p50_h14 = p50 < 0 ? -1 : p50 / double(kHourMs);
  nlohmann::json criteria = l4_criteria(store, repo, w, now, settings.l4);
  bool ready = !criteria.empty() && std::all_of(criteria.begin(), criteria.end(),
                                                [](const auto& c) { return c["pass"] == true; });
  nlohmann::json out = {{"target", "L4"}, {"criteria", criteria}, {"ready", ready}, {"note", ""}};
  if (criteria.empty())
    out["note"] =
        "No L4 criteria are defined: upstream leaves L4 to PyTorch's Core Maintainers "
        "(RFC-0050). A relay operator can set hud.l4_criteria.";
  return out;
}

}  // namespace

std::string pass_rate_chip(const nlohmann::json& pass_rate) {
  if (!pass_rate.is_number()) return "grey";
  double p = pass_rate.get<double>();
  return p >= 95 ? "green" : p >= 80 ? "yellow" : "red";
}

std::string parse_hud_query(const std::function<std::string(const std::string&)>& param,
                            HudQuery* q) {
  if (auto r = param("range"); !r.empty()) {
    if (r != "24h" && r != "7d" && r != "30d") return "range must be 24h, 7d or 30d";
    q->range = r;
  }
  if (auto t = param("tab"); !t.empty()) {
    if (t != "pr" && t != "nightly") return "tab must be pr or nightly";
    q->tab = t;
  }
  auto integer = [&](const char* name, int lo, int hi, int* out) -> std::string {
    std::string v = param(name);
    if (v.empty()) return "";
    try {
      size_t used = 0;
      int n = std::stoi(v, &used);
      if (used != v.size() || n < lo || n > hi) throw std::out_of_range(name);
      *out = n;
      return "";
    } catch (const std::exception&) {
      return fmt::format("{} must be an integer from {} to {}", name, lo, hi);
    }
  };
  for (auto [name, lo, hi, out] : {std::tuple{"days", 1, 365, &q->days},
                                   {"page", 1, 1000000, &q->page},
                                   {"per_page", 1, 100, &q->per_page}})
    if (auto e = integer(name, lo, hi, out); !e.empty()) return e;
  if (q->days != 7 && q->days != 14 && q->days != 30 && q->days != 90)
    return "days must be 7, 14, 30 or 90";
  return "";
}

nlohmann::json allowlist_json(const Allowlist& allow) {
  nlohmann::json out = {{"L1", nlohmann::json::array()},
                        {"L2", nlohmann::json::array()},
                        {"L3", nlohmann::json::array()},
                        {"L4", nlohmann::json::array()}};
  for (const auto& e : allow.entries()) {
    nlohmann::json item = {{"repo", e.repo}, {"oncalls", e.oncalls}};
    if (!e.device.empty()) item["device"] = e.device;
    if (!e.events.empty()) item["events"] = e.events;  // participation, when the entry names it
    out[to_string(e.level)].push_back(item);
  }
  return out;
}

nlohmann::json summary_json(Store& store, const Allowlist& allow, const HudQuery& q,
                            const nlohmann::json& relay_health, const HudSettings& settings) {
  int64_t from = q.now_ms - range_ms(q.range);
  auto stats = store.jobs.repo_stats(from, filter_of(q.tab));
  std::map<std::string, RepoStats> by_repo;
  for (const auto& s : stats) by_repo[s.repo] = s;
  static const std::vector<std::pair<std::string, std::string>> levels = {
      {"L4", "merge-gating"},
      {"L3", "check runs on PR"},
      {"L2", "callback-only"},
      {"L1", "webhook-only"}};
  nlohmann::json sections = nlohmann::json::array();
  std::set<std::string> listed;
  for (const auto& [level, title] : levels) {
    nlohmann::json backends = nlohmann::json::array();
    for (const auto& e : allow.entries()) {
      if (to_string(e.level) != level) continue;
      listed.insert(e.repo);
      RepoStats s = by_repo.count(e.repo) ? by_repo[e.repo] : RepoStats{e.repo, ""};
      backends.push_back(backend_row(s, level, e.oncalls));
    }
    // Repos that report but are not on the allowlist appear under the level they reported.
    for (const auto& s : stats)
      if (!listed.count(s.repo) && s.level == level) backends.push_back(backend_row(s, level, {}));
    std::sort(backends.begin(), backends.end(),
              [](const auto& a, const auto& b) { return a["repo"] < b["repo"]; });
    sections.push_back({{"level", level}, {"title", title}, {"backends", backends}});
  }
  nlohmann::json freshness = nlohmann::json::array();
  for (const auto& f :
       nightly_freshness(store.jobs, allow, q.now_ms, settings.nightly_stale_after_h))
    freshness.push_back(
        {{"repo", f.repo},
         {"last_ms", f.last_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(f.last_ms)},
         {"age_h",
          f.last_ms < 0 ? nlohmann::json(nullptr) : round1((q.now_ms - f.last_ms) / 3.6e6)},
         {"stale", f.stale}});
  return {{"range", q.range},
          {"tab", q.tab},
          {"from_ms", from},
          {"to_ms", q.now_ms},
          {"detail_since_ms", store.jobs.detail_since()},
          {"health", relay_health},
          {"sections", sections},
          {"level_status",
           level_status_json(level_statuses(store, allow, q.now_ms, settings.levels))["repos"]},
          {"nightly_freshness", freshness}};
}

nlohmann::json repo_json(Store& store, const Allowlist& allow, const std::string& repo,
                         const HudQuery& q, const HudSettings& settings) {
  int64_t now = q.now_ms;
  int64_t from = now - range_ms(q.range);
  JobFilter filter = filter_of(q.tab);
  auto found = store.jobs.repo_stats(from, filter, repo);
  RepoStats s = found.empty() ? RepoStats{repo, ""} : found[0];
  const AllowlistEntry* entry = allow.find(repo);
  std::string level = entry ? to_string(entry->level) : (s.level.empty() ? "none" : s.level);
  int64_t completed = s.jobs - s.in_progress;
  auto e2e = store.jobs.e2e_histogram(repo, from);
  nlohmann::json stats = {
      {"pass_rate", percent(s.success, completed)},
      {"pass_rate_excluding_upstream", percent(s.success, completed - s.failure_upstream)},
      {"upstream_failures", s.failure_upstream},
      {"prs", s.prs},
      {"jobs", s.jobs},
      {"failures", s.failure},
      {"timed_out", s.timed_out},
      {"avg_queue_min", minutes(s.queue_sum_ms, s.queue_n)},
      {"avg_exec_min", minutes(s.exec_sum_ms, s.exec_n)},
      {"timeout_rate", percent(s.timed_out, completed)},
      {"e2e_p50_min", ms_to_min(percentile_ms(e2e, 0.50))},
      {"e2e_p95_min", ms_to_min(percentile_ms(e2e, 0.95))},
      {"overrun_rate", percent(s.overruns, s.exec_n)}};
  stats["chip"] = pass_rate_chip(stats["pass_rate"]);

  nlohmann::json out = {{"repo", repo},
                        {"level", level},
                        {"range", q.range},
                        {"tab", q.tab},
                        {"detail_since_ms", store.jobs.detail_since()},
                        {"stats", stats},
                        {"level_status", nullptr}};
  // One status serves both the readiness panel (below L3) and the level check (L2, L3).
  std::optional<LevelStatus> status;
  if (level == "L3")
    status = demotion_status(store, repo, now, settings.levels);
  else if (level != "L4")
    status = promotion_status(store, repo, now, settings.levels);
  out["readiness"] = readiness_json(store, repo, level, now, settings, status ? &*status : nullptr);
  if (level == "L2" || level == "L3") out["level_status"] = level_status_json(*status);
  int offset = (q.page - 1) * q.per_page;
  if (q.tab == "pr") {
    int64_t total = 0;
    auto prs = store.jobs.repo_prs(repo, from, q.per_page, offset, &total);
    std::vector<std::string> columns;
    std::map<int64_t, nlohmann::json> cells;
    for (const JobRecord& j : store.jobs.repo_jobs_for_prs(repo, prs, from)) {
      std::string col = j.workflow_name + "/" + j.job_name;
      if (std::find(columns.begin(), columns.end(), col) == columns.end()) columns.push_back(col);
      auto& cell = cells[j.pr_number][col];
      // The latest attempt wins, as HUD keeps the highest run_attempt.
      if (cell.is_null() || cell["run_attempt"].get<int64_t>() <= j.run_attempt)
        cell = job_summary(j);
    }
    std::sort(columns.begin(), columns.end());
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t pr : prs) rows.push_back({{"pr", pr}, {"cells", cells[pr]}});
    out["matrix"] = {{"page", q.page},     {"per_page", q.per_page},
                     {"total_prs", total}, {"pages", (total + q.per_page - 1) / q.per_page},
                     {"columns", columns}, {"rows", rows}};
  } else {
    int64_t total = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& j : store.jobs.recent_jobs(repo, from, filter, q.per_page, offset, &total))
      rows.push_back(job_summary(j));
    out["runs"] = {{"page", q.page},
                   {"per_page", q.per_page},
                   {"total", total},
                   {"pages", (total + q.per_page - 1) / q.per_page},
                   {"rows", rows}};
  }
  return out;
}

nlohmann::json job_json(Store& store, const std::string& key) {
  auto j = store.jobs.get_job(key);
  if (!j) return nullptr;
  nlohmann::json out = job_summary(*j);
  out["level"] = j->level;
  out["check_run_id"] = j->check_run_id;
  out["artifact_url"] = j->artifact_url;
  out["tests"] = {{"passed", j->tests_passed},
                  {"failed", j->tests_failed},
                  {"skipped", j->tests_skipped},
                  {"total", j->tests_total}};
  out["failed_tests"] = j->failed_tests_json.empty()
                            ? nlohmann::json::array()
                            : nlohmann::json::parse(j->failed_tests_json, nullptr, false);
  out["triage_verdict"] = j->triage_json.empty()
                              ? nlohmann::json(nullptr)
                              : nlohmann::json::parse(j->triage_json, nullptr, false);
  return out;
}

nlohmann::json metrics_json(Store& store, const HudQuery& q) {
  int64_t last_day = q.now_ms / kDayMs;
  int64_t first_day = last_day - q.days + 1;
  std::map<std::string, nlohmann::json> by_repo;
  for (const auto& d : store.jobs.daily_stats(first_day * kDayMs, filter_of(q.tab))) {
    auto& points = by_repo[d.repo];
    if (points.is_null()) points = nlohmann::json::array();
    points.push_back({{"day", d.day},
                      {"date", fmt::format("{}", d.day)},
                      {"runs", d.jobs},
                      {"failures", d.failure},
                      {"pass_rate", percent(d.success, d.jobs)}});
  }
  nlohmann::json backends = nlohmann::json::array();
  for (auto& [repo, points] : by_repo) backends.push_back({{"repo", repo}, {"points", points}});
  return {{"days", q.days},
          {"tab", q.tab},
          {"detail_since_ms", store.jobs.detail_since()},
          {"first_day", first_day},
          {"last_day", last_day},
          {"backends", backends}};
}

nlohmann::json pr_json(Store& store, const Allowlist& allow, int64_t pr_number) {
  std::map<std::string, nlohmann::json> by_repo;
  for (const JobRecord& j : store.jobs.jobs_for_pr(pr_number)) {
    auto& b = by_repo[j.repo];
    if (b.is_null()) {
      const AllowlistEntry* e = allow.find(j.repo);
      b = {{"repo", j.repo},
           {"level", e ? to_string(e->level) : j.level},
           {"jobs", nlohmann::json::array()}};
    }
    b["jobs"].push_back(job_summary(j));
  }
  nlohmann::json backends = nlohmann::json::array();
  for (auto& [repo, b] : by_repo) backends.push_back(b);
  return {{"pr", pr_number}, {"backends", backends}};
}

}  // namespace ootci
