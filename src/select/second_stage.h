#pragma once
// The second stage of a staged selection (`ootci select changed --staged`): tests that reached a
// changed op only while generating their inputs run only when the first stage shows the change
// raising. A change that alters values there changes what such a test draws, not what it checks
// against the CPU; one that raises fails every one of them, and also the first-stage tests that
// call the op themselves, with an error that is not a mismatch.
#include <optional>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

// Said in the selection JSON ("then.when") and by `select changed`.
inline constexpr const char* kSecondStageWhen =
    "a first-stage test fails with an error other than a mismatch (AssertionError) that it did "
    "not have in the last green run";

// Said in the run's manifest (second_stage.why) when second_stage_reason finds nothing.
inline constexpr const char* kSecondStageNotCalledFor =
    "no first-stage test failed other than by a mismatch";

// Why the second stage must run, from the first stage's results: the first failing result whose
// error is not an AssertionError (crashes and timeouts count) and that was not failing the same
// way in `last_green` (nullptr: no green run, so every such failure counts); nullopt when none.
std::optional<std::string> second_stage_reason(const std::vector<TestResult>& first,
                                               const std::vector<TestResult>* last_green);

}  // namespace ootci
