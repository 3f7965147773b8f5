#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay/level_status.h"
#include "relay_store/store.h"

namespace ootci {

// The HUD's JSON API. Every page renders from exactly these documents, so a page's numbers are
// the API's numbers. All functions are read-only over the store.
struct HudQuery {
  std::string range = "7d";  // 24h, 7d, 30d
  std::string tab = "pr";    // pr or nightly
  int days = 7;              // metrics: 7, 14, 30, 90
  int page = 1;
  int per_page = 20;
  int64_t now_ms = 0;
};

// Validates and fills a query from request parameters; returns an error message or "".
std::string parse_hud_query(const std::function<std::string(const std::string&)>& param,
                            HudQuery* q);

// What the operator set for the HUD (relay.yaml's hud and nightly sections).
struct HudSettings {
  L4Criteria l4;           // what an L3 repo's readiness panel measures
  LevelThresholds levels;  // promotion to and demotion from L3
  int64_t nightly_stale_after_h = 36;
};

nlohmann::json allowlist_json(const Allowlist& allow);
// With every L2 and L3 repo's level status (as /api/crcr/level-status has them) and how fresh
// each backend's nightly is.
nlohmann::json summary_json(Store& store, const Allowlist& allow, const HudQuery& q,
                            const nlohmann::json& relay_health, const HudSettings& settings = {});
// With the readiness panel for the repo's next level: the L3 promotion criteria below L3, the
// operator's L4 criteria at L3 (or a note that none are defined), nothing beyond L4; and the
// repo's level status (promotion at L2, demotion at L3, with an open demotion PR).
nlohmann::json repo_json(Store& store, const Allowlist& allow, const std::string& repo,
                         const HudQuery& q, const HudSettings& settings = {});
nlohmann::json job_json(Store& store, const std::string& key);  // null if unknown
nlohmann::json metrics_json(Store& store, const HudQuery& q);
nlohmann::json pr_json(Store& store, const Allowlist& allow, int64_t pr_number);

// Pass-rate chip colour: green ≥ 95 %, yellow ≥ 80 %, red otherwise, grey with no data.
std::string pass_rate_chip(const nlohmann::json& pass_rate);

}  // namespace ootci
