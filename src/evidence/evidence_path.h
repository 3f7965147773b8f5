#pragma once
// Where a backend keeps its evidence: shared by `ootci run`, `ingest`, `judge` and `shards`.
#include <string>

#include "plan/backend_config.h"

namespace ootci {

// <workspace>/evidence.db (docs/run.md).
std::string evidence_path(const BackendConfig& backend);

// <workspace>/runs/<run_id>: a run's plan, manifest, JUnit XML, report and work files.
std::string run_folder(const BackendConfig& backend, const std::string& run_id);

// <workspace>/bucket_changes.json: what the last `select propose` or `select rebucket` changed
// (or proposed), for the device page.
std::string bucket_changes_path(const BackendConfig& backend);

// A new run id, "r-20261129T191000Z-1a2b3c": UTC start time and 6 random hex digits, so ids
// sort by time and two machines starting in the same second do not collide.
std::string new_run_id(int64_t now_ms);

}  // namespace ootci
