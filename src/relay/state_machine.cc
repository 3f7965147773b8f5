#include "relay/state_machine.h"

namespace ootci {

TransitionDecision decide_transition(const std::optional<JobRecord>& current, JobStatus status,
                                     const std::string& hash, bool self_report) {
  bool completing = status == JobStatus::kCompleted;
  if (!current) {
    if (completing && !self_report)
      return {Transition::kInvalid, "invalid transition: completed without in_progress"};
    return {Transition::kInsert, ""};
  }
  const JobRecord& j = *current;
  if (!completing) {
    if (hash == j.in_progress_hash) return {Transition::kDuplicate, ""};
    if (j.status == JobStatus::kInProgress)
      return {Transition::kConflict,
              "conflicting repeat: in_progress was already applied with "
              "a different body"};
    return {Transition::kInvalid, "invalid transition: completed → in_progress"};
  }
  if (j.status == JobStatus::kInProgress) return {Transition::kUpdate, ""};
  if (hash == j.completed_hash) return {Transition::kDuplicate, ""};
  return {Transition::kConflict,
          "conflicting repeat: completed was already applied with a different body"};
}

int transition_http_status(Transition t) {
  switch (t) {
    case Transition::kConflict:
      return 409;
    case Transition::kInvalid:
      return 400;
    default:
      return 200;
  }
}

}  // namespace ootci
