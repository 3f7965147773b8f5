#include "relay/level_status.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>

#include "relay_store/hud_rollup.h"

namespace ootci {
namespace {

constexpr double kDaySeconds = 86400;

// Targets print the way upstream labels them: "≥ 1 month", "< 3 h", "< 30 min", "≥ 90%".
std::string number(double v) {
  return fmt::format("{:g}", v);
}

LevelCriterion tenure(const LevelThresholds& t) {
  return {"tenureAtL2Days",
          "Time at L2",
          t.tenure_at_l2_days == 30 ? "≥ 1 month" : "≥ " + number(t.tenure_at_l2_days) + " days",
          MeasureKind::kDays,
          t.tenure_at_l2_days,
          true,
          {}};
}

LevelCriterion below_hours(const char* key, const char* label, double hours) {
  return {key, label, "< " + number(hours) + " h", MeasureKind::kDuration, hours * 3600, false, {}};
}

// The window's figures of one repo's pull_request and push jobs, as the criteria measure them.
struct Measured {
  RepoStats stats;
  std::optional<double> e2e_p50_s, max_exec_s, avg_queue_s, timeout_rate, pass_rate;
};

std::optional<double> ratio(int64_t part, int64_t whole) {
  if (whole <= 0) return std::nullopt;
  return double(part) / double(whole);
}

Measured measure(Store& store, const std::string& repo, int64_t since_ms,
                 const LevelThresholds& t) {
  Measured m;
  auto found = store.jobs.repo_stats(since_ms, JobFilter::kPullRequest, repo);
  m.stats = found.empty() ? RepoStats{repo, ""} : found[0];
  const RepoStats& s = m.stats;
  int64_t completed = s.jobs - s.in_progress;
  int64_t p50 = percentile_ms(store.jobs.e2e_histogram(repo, since_ms), 0.5);
  if (p50 >= 0) m.e2e_p50_s = p50 / 1000.0;
  if (s.exec_max_ms >= 0) m.max_exec_s = s.exec_max_ms / 1000.0;
  if (s.queue_n > 0) m.avg_queue_s = double(s.queue_sum_ms) / s.queue_n / 1000.0;
  m.timeout_rate = ratio(s.timed_out, completed);
  m.pass_rate =
      ratio(s.success, t.pass_rate_excludes_upstream ? completed - s.failure_upstream : completed);
  return m;
}

LevelCriterion with(LevelCriterion c, std::optional<double> measured) {
  c.measured = measured;
  return c;
}

LevelCriterion timeout_rate(const LevelThresholds& t, std::optional<double> measured) {
  return with({"timeoutRate",
               "Timeout Rate",
               "< " + number(t.timeout_rate_percent) + "%",
               MeasureKind::kRatio,
               t.timeout_rate_percent / 100,
               false,
               {}},
              measured);
}

LevelCriterion pass_rate(const LevelThresholds& t, std::optional<double> measured) {
  return with({"passRate",
               t.pass_rate_excludes_upstream ? "Job Pass Rate (upstream-caused failures excluded)"
                                             : "Job Pass Rate",
               "≥ " + number(t.pass_rate_percent) + "%",
               MeasureKind::kRatio,
               t.pass_rate_percent / 100,
               true,
               {}},
              measured);
}

}  // namespace

std::optional<bool> LevelCriterion::met() const {
  if (!measured || std::isnan(*measured)) return std::nullopt;
  return at_least ? *measured >= target : *measured < target;
}

std::string duration_display(double seconds) {
  int64_t s = std::llround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d {}h", s / 86400, s % 86400 / 3600);
}

std::string LevelCriterion::measured_text() const {
  if (!measured || std::isnan(*measured)) return "–";
  switch (kind) {
    case MeasureKind::kDays:
      return fmt::format("{:.0f} days", *measured);
    case MeasureKind::kDuration:
      return duration_display(*measured);
    case MeasureKind::kRatio:
      return fmt::format("{:.1f}%", *measured * 100);
  }
  return "–";
}

std::string LevelStatus::change() const {
  if (no_data) return "";
  bool all_met = true, one_fails = false;
  for (const auto& c : criteria) {
    auto m = c.met();
    all_met = all_met && m == true;
    one_fails = one_fails || m == false;
  }
  if (promotion) return all_met && !criteria.empty() ? "promote" : "";
  return one_fails ? "demote" : "";
}

LevelStatus promotion_status(Store& store, const std::string& repo, int64_t now_ms,
                             const LevelThresholds& t) {
  LevelStatus out{repo, "L2", true, false, t.promotion_window_days, {}, std::nullopt};
  Measured m = measure(store, repo, now_ms - t.promotion_window_days * kRollupDayMs, t);
  out.no_data = m.stats.jobs == 0;
  std::optional<double> days;
  if (auto first = store.levels.first_at_level(repo, "L2"))
    days = double(now_ms - *first) / 1000.0 / kDaySeconds;
  out.criteria = {
      with(tenure(t), days),
      with(below_hours("e2eTimeS", "End-to-End Time (P50)", t.e2e_p50_hours), m.e2e_p50_s),
      with(below_hours("maxExecTimeS", "Max Execution Time", t.max_exec_hours), m.max_exec_s),
      with({"avgQueueTimeS",
            "Avg Queue Time",
            "< " + number(t.avg_queue_min) + " min",
            MeasureKind::kDuration,
            t.avg_queue_min * 60,
            false,
            {}},
           m.avg_queue_s),
      timeout_rate(t, m.timeout_rate),
      pass_rate(t, m.pass_rate),
  };
  return out;
}

LevelStatus demotion_status(Store& store, const std::string& repo, int64_t now_ms,
                            const LevelThresholds& t) {
  LevelStatus out{
      repo, "L3", false, false, t.demotion_window_days, {}, store.levels.demotion(repo)};
  Measured m = measure(store, repo, now_ms - t.demotion_window_days * kRollupDayMs, t);
  out.no_data = m.stats.jobs == 0;
  out.criteria = {
      with(below_hours("e2eTimeS", "End-to-End Time (P50)", t.e2e_p50_hours), m.e2e_p50_s),
      timeout_rate(t, m.timeout_rate),
      pass_rate(t, m.pass_rate),
  };
  return out;
}

std::vector<LevelStatus> level_statuses(Store& store, const Allowlist& allow, int64_t now_ms,
                                        const LevelThresholds& t) {
  std::vector<std::pair<std::string, bool>> repos;  // (repo, promotion)
  for (const std::string& repo : allow.targets()) {
    Level level = allow.level_of(repo);
    if (level == Level::kL2 || level == Level::kL3) repos.push_back({repo, level == Level::kL2});
  }
  // A few repos at a time, each on its own store connection: a status reads a few thousand
  // rollup rows, and the page waits for the slowest, not for their sum.
  constexpr size_t kAtOnce = 4;
  std::vector<LevelStatus> out;
  for (size_t begin = 0; begin < repos.size(); begin += kAtOnce) {
    std::vector<std::future<LevelStatus>> batch;
    for (size_t i = begin; i < std::min(repos.size(), begin + kAtOnce); ++i)
      batch.push_back(std::async(std::launch::async, [&, i] {
        const auto& [repo, promotion] = repos[i];
        return promotion ? promotion_status(store, repo, now_ms, t)
                         : demotion_status(store, repo, now_ms, t);
      }));
    for (auto& f : batch) out.push_back(f.get());
  }
  return out;
}

nlohmann::json level_status_json(const LevelStatus& s) {
  nlohmann::json criteria = nlohmann::json::array();
  for (const auto& c : s.criteria) {
    auto met = c.met();
    criteria.push_back({{"criterion", c.label},
                        {"measured", c.measured_text()},
                        {"target", c.target_label},
                        {"met", met ? nlohmann::json(*met) : nlohmann::json(nullptr)}});
  }
  std::string change = s.change();
  nlohmann::json demotion = nullptr;
  if (s.demotion)
    demotion = {{"number", s.demotion->pr_number},
                {"url", s.demotion->pr_url},
                {"sinceMs", s.demotion->since_ms}};
  return {{"repo", s.repo},
          {"level", s.level},
          {"change", change.empty() ? nlohmann::json(nullptr) : nlohmann::json(change)},
          {"noData", s.no_data},
          {"windowDays", s.window_days},
          {"criteria", criteria},
          {"demotionPr", demotion}};
}

nlohmann::json level_status_json(const std::vector<LevelStatus>& statuses) {
  nlohmann::json repos = nlohmann::json::array();
  for (const auto& s : statuses) repos.push_back(level_status_json(s));
  return {{"repos", repos}};
}

}  // namespace ootci
