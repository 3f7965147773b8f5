#pragma once
#include <optional>
#include <string>

#include "relay_store/store.h"

namespace ootci {

// CRCR's DISPATCHED → IN_PROGRESS → COMPLETED per job, plus safe retries: an exact repeat of an
// applied callback is a duplicate (200), a different body for an applied step is a conflict (409).
enum class Transition {
  kInsert,     // first callback of the job
  kUpdate,     // in_progress → completed
  kDuplicate,  // exact repeat of an applied callback
  kConflict,   // same step, different body
  kInvalid,    // skipped in_progress, or going backwards
};

struct TransitionDecision {
  Transition transition;
  std::string reason;  // for kConflict and kInvalid
};

// `self_report`: nightly/periodic runs arrive as one completed callback with no in_progress.
TransitionDecision decide_transition(const std::optional<JobRecord>& current, JobStatus status,
                                     const std::string& outcome_hash, bool self_report);

int transition_http_status(Transition t);

}  // namespace ootci
