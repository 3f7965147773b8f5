#pragma once
// What a run tested, so it can be reproduced or bisected later (docs/run.md, "Run manifest").
#include <nlohmann/json.hpp>
#include <string>

#include "evidence/evidence_store.h"
#include "plan/backend_config.h"

namespace ootci {

nlohmann::json build_manifest(const BackendConfig& backend, const nlohmann::json& plan,
                              const std::string& plan_path, const RunInfo& run);
// The manifest's `backend_revision`: `git describe --always --dirty` of device_root (a dirty tree
// adds a digest of its diff under device_root), or a digest of its files outside git.
std::string backend_revision(const BackendConfig& backend);

void finalize_manifest(nlohmann::json& manifest, int64_t ended_ms);

}  // namespace ootci
