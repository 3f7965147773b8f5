#pragma once
// The JSON forms of config entries in a version 1 plan (docs/plan.md, "Resolved plan JSON").
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/suite_config.h"

namespace ootci {

inline constexpr const char* kPlanSchema = "ootci.plan";
inline constexpr int kPlanVersion = 1;

nlohmann::json precision_json(const std::optional<Precision>& p);  // {atol, rtol} or null
nlohmann::json dtype_json(const DtypeEntry& d);                    // {name, precision, force_xfail}
nlohmann::json op_json(const OpEntry& op);                         // {name, force_xfail, dtypes}
// Everything but `source`, so identical rules from two places compare equal.
nlohmann::json rule_body_json(const Rule& rule);
nlohmann::json rule_json(const Rule& rule);

}  // namespace ootci
