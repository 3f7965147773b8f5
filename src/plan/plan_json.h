#pragma once
// The JSON forms of config entries in a version 1 plan (docs/plan.md, "Resolved plan JSON"), and
// the check of a plan file that comes from outside.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/suite_config.h"

namespace ootci {

inline constexpr const char* kPlanSchema = "ootci.plan";
inline constexpr int kPlanVersion = 1;

nlohmann::json precision_json(const std::optional<Precision>& p);  // {atol, rtol} or null
nlohmann::json dtype_json(const DtypeEntry& d);                    // {name, precision, force_xfail}
nlohmann::json op_json(const OpEntry& op);                         // {name, force_xfail, dtypes}
// Everything but `source`, so identical rules from two places compare equal.
nlohmann::json rule_body_json(const Rule& rule);
nlohmann::json rule_json(const Rule& rule);

// A plan from outside (`ootci plan env --plan FILE`) must at least be one this ootci writes: a
// JSON object with `schema` "ootci.plan" and `version` 1 (of any other type too: "not an
// ootci.plan version 1 file"), `backend.device_type` a non-empty string, and `files`, when
// present, a list of objects whose `path` and `relpath` are strings. Returns the plan; throws
// Error naming `source` and the field, e.g. "plan.json: files[2].relpath: expected a string".
nlohmann::json parse_plan_json(const std::string& text, const std::string& source);
// The same for the file at `path` ("cannot open file" when it cannot be read).
nlohmann::json read_plan_json(const std::string& path);

}  // namespace ootci
