#pragma once
// `ootci report`: the CRCR callback (schema version "1") for a dispatch, built from the GitHub
// Actions environment or flags and from a run's verdict, sent with an OIDC token
// (docs/dispatch.md).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/job_status.h"
#include "evidence/evidence_store.h"
#include "plan/backend_config.h"

namespace ootci {

// The `workflow` identity. in_progress and completed must come from the same identity.
struct WorkflowIdentity {
  std::string name;
  std::string url;
  std::string run_id;  // integer-parsable, as CRCR requires
  std::string run_attempt = "1";
  std::string job_name;
  std::string check_run_id;  // default "<run_id>-<run_attempt>", as CRCR's action falls back
  std::string started_at;    // ISO 8601 UTC; default now on in_progress
  std::string completed_at;  // default now on completed
};

// GITHUB_WORKFLOW, GITHUB_SERVER_URL/GITHUB_REPOSITORY/GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT,
// GITHUB_JOB; OOTCI_CHECK_RUN_ID for check_run_id (a workflow passes ${{ job.check_run_id }}).
// Fields whose variables are unset stay empty.
WorkflowIdentity workflow_from_environment(const EnvLookup& env);

// What a finished run says, for a `completed` callback.
struct RunOutcome {
  Conclusion conclusion = Conclusion::kFailure;  // ootci's runs: success, failure or cancelled
  int64_t passed = 0, failed = 0, skipped = 0, total = 0;
  nlohmann::json failed_tests = nlohmann::json::array();  // within RFC-0054's caps
  nlohmann::json triage_verdict;                          // null when none
};

// Judges `run_id` in the store (against the last green run of its config), counts its results,
// and lists the failing tests capped at 1000 entries with message and trace cut to the caps.
// An interrupted run concludes `cancelled`. Throws Error when the run does not exist.
RunOutcome outcome_of_run(EvidenceStore& store, const std::string& run_id);

// The status a callback is asked for; other text is an Error naming workflow.status.
JobStatus parse_callback_status(std::string_view text);

// The body: client_payload's event_type/delivery_id/payload echoed, callback_token when the
// dispatch had one, `workflow` with schema_version "1", status, conclusion (null unless
// completed), the identity, test_results, artifact_url; failed_tests_detail at the top level when
// present. The triage verdict goes where `relay` reads it: `crcr` (upstream, test-infra#8803)
// as workflow.triage_verdict with an analyzer object, `ootci` at the top level.
nlohmann::json build_callback_body(const nlohmann::json& client_payload, JobStatus status,
                                   const WorkflowIdentity& workflow,
                                   const std::optional<RunOutcome>& outcome,
                                   const std::string& artifact_url, const std::string& relay);

// The OIDC token: token_file, else token_command, else GitHub Actions'
// ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN with `audience`. Throws Error saying which source failed.
std::string fetch_oidc_token(const ReportSettings& settings, const EnvLookup& env);

struct PostOutcome {
  int status = 0;  // last HTTP status, 0 when none arrived
  std::string body;
  int attempts = 0;
  std::string error;  // network error text when status == 0
  bool ok() const { return status >= 200 && status < 300; }
};

// POSTs `body` with `Authorization: Bearer <token>`. With settings.relay == "ootci", network
// errors, 5xx and 429 are retried up to max_attempts with exponential backoff (1 s, 2 s, ...
// capped at 30 s, or Retry-After when the relay sends one); with "crcr", exactly one attempt.
// `sleep_ms` is injectable for tests.
PostOutcome post_callback(const ReportSettings& settings, const std::string& token,
                          const nlohmann::json& body,
                          const std::function<void(int64_t)>& sleep_ms = nullptr);

}  // namespace ootci
