#pragma once
// The revisions of the three moving targets a run tested: the backend, the upstream tests and
// upstream core (the run manifest's `targets`; docs/attribute.md).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/backend_config.h"

namespace ootci {

struct TargetRevisions {
  std::string backend;  // commit of attribute.targets.backend.repo ("" when not a git checkout)
  std::string tests;    // commit of attribute.targets.tests.repo
  std::string core;     // what attribute.targets.core.revision printed ("" without one)
  bool operator==(const TargetRevisions&) const = default;
};

// Asks git and the core revision command now.
TargetRevisions current_target_revisions(const BackendConfig& backend);

nlohmann::json target_revisions_json(const TargetRevisions& revisions);
// From a manifest's `targets`; nullopt when the run recorded none (older runs).
std::optional<TargetRevisions> manifest_target_revisions(const nlohmann::json& manifest);

}  // namespace ootci
