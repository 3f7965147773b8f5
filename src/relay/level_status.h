#pragma once
// The level lifecycle's numbers, as upstream HUD serves them at /api/crcr/level-status
// (torchci/pages/api/crcr/level-status.ts, thresholds from torchci/lib/crcr/l3Thresholds.ts): per
// repo a level change, the window it was judged on, and one row per criterion with what was
// measured, the target and whether it is met. Upstream lists the demotion status of L3 repos;
// ootci adds the promotion status of L2 repos (change "promote"). Everything is read from the
// HUD's rollups, so a status costs a few hundred rollup rows whatever the history holds.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay_store/store.h"

namespace ootci {

enum class MeasureKind { kDays, kDuration, kRatio };

struct LevelCriterion {
  std::string key;           // upstream's: tenureAtL2Days, e2eTimeS, maxExecTimeS, ...
  std::string label;         // "End-to-End Time (P50)"
  std::string target_label;  // "< 3 h"
  MeasureKind kind = MeasureKind::kRatio;
  double target = 0;      // in the measure's unit: days, seconds, or a ratio (0.9 for 90 %)
  bool at_least = false;  // met when measured >= target; otherwise measured < target
  std::optional<double> measured;  // none: no data to judge

  // true meets, false fails, none when there is no data (upstream's null).
  std::optional<bool> met() const;
  // As upstream shows it: "34 days", "2h 5m", "97.3%", "–".
  std::string measured_text() const;
};

struct LevelStatus {
  std::string repo;
  std::string level;       // L3 for a demotion status, L2 for a promotion status
  bool promotion = false;  // which criteria: promotion to L3 or demotion from it
  bool no_data = false;    // no PR or push job at all in the window
  int window_days = 0;
  std::vector<LevelCriterion> criteria;
  std::optional<Demotion> demotion;  // an open demotion PR (L3 only)

  // "promote" when every criterion is met, "demote" when one fails; "" otherwise. Silence (no
  // job at all) changes nothing: it is listed, but never opens a PR (as upstream).
  std::string change() const;
};

// upstream's durationDisplay: "45s", "12m 5s", "2h 5m", "3d 4h".
std::string duration_display(double seconds);

// One repo's status: promotion criteria for an L2 repo, demotion criteria for an L3 repo.
LevelStatus promotion_status(Store& store, const std::string& repo, int64_t now_ms,
                             const LevelThresholds& t);
LevelStatus demotion_status(Store& store, const std::string& repo, int64_t now_ms,
                            const LevelThresholds& t);
// Every L2 and L3 repo of the allowlist, by repo name.
std::vector<LevelStatus> level_statuses(Store& store, const Allowlist& allow, int64_t now_ms,
                                        const LevelThresholds& t);

// Upstream's LevelStatusRepo: {repo, level, change, noData, windowDays, criteria: [{criterion,
// measured, target, met}]}, plus ootci's additive `demotionPr` ({number, url, sinceMs} or null).
nlohmann::json level_status_json(const LevelStatus& status);
// {"repos": [...]}
nlohmann::json level_status_json(const std::vector<LevelStatus>& statuses);

}  // namespace ootci
