#pragma once
// `ootci plan resolve`: ootci.yaml plus its test-suite configs become one plan (docs/plan.md,
// "Merge rules" and "Resolved plan JSON, version 1").
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

struct PlanResult {
  nlohmann::json plan;  // meaningful only when errors is empty
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  size_t file_count = 0;
  size_t rule_count = 0;
  bool ok() const { return errors.empty(); }
};

// `strict`: unknown keys in configs are errors, not warnings. With test_configs.by_torch, the
// set for the torch of backend.python applies (named in the plan as "torch_config_set").
PlanResult resolve_plan(const BackendConfig& backend, bool strict = false);
// The same for a torch version known already ("2.6.0"): no Python is asked.
PlanResult resolve_plan_for_torch(const BackendConfig& backend, const std::string& torch_version,
                                  bool strict = false);

// The file's path relative to torch_root, else device_root, when under one; else as given.
std::string plan_relpath(const std::string& path, const std::string& torch_root,
                         const std::string& device_root);

// Writes plan.json atomically (a temporary file in the same folder, then rename), so a reader
// never sees half a plan. Creates the folder if needed; throws Error on failure.
// The plan as its file holds it (write_plan); a run manifest's plan_sha256 is of this text.
std::string plan_text(const nlohmann::json& plan);
// Which adaptation ran: the plan's files (by relpath), rules and capabilities, without absolute
// paths or source positions, so two machines with the same configs agree.
std::string plan_config_hash(const nlohmann::json& plan);
void write_plan(const nlohmann::json& plan, const std::string& path);

}  // namespace ootci
