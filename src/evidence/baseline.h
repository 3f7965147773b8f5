#pragma once
// What a run is judged against (docs/run.md): the last green run of the same backend and config
// hash, and its results. The one lookup of it, for the runner, the judge command, the report page
// and the callback.
#include <optional>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

struct Baseline {
  std::optional<RunInfo> run;  // nullopt: no green run to compare with
  std::vector<TestResult> results;
  // What judge() and second_stage_reason() take: null without a green run.
  const std::vector<TestResult>* results_or_null() const { return run ? &results : nullptr; }
};

// The newest finished green run of `run`'s backend and config hash, never `run` itself (which may
// be green already), with its results.
Baseline baseline_of(EvidenceStore& store, const RunInfo& run);

}  // namespace ootci
