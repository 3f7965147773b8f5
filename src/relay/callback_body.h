#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "base/callback_caps.h"
#include "base/utf8.h"
#include "relay_store/records.h"

namespace ootci {

// A callback body (schema version "1"), as CRCR's callback action sends it, plus the additive
// failed_tests_detail and triage_verdict (top level, or workflow.triage_verdict as upstream CRCR
// reads it since test-infra#8803).
struct CallbackBody {
  nlohmann::json json;  // the parsed body
  std::string raw;      // the body as received
  // sha256 of what the callback says happened (status, conclusion, test counts, failed test
  // names), not of its bytes: a re-sent step with fresh started_at/completed_at is the same step.
  std::string outcome_hash;
  std::string event_type;  // pull_request (default), push, nightly, periodic
  std::string delivery_id;
  JobStatus status = JobStatus::kInProgress;
  JobConclusion conclusion;
  std::string workflow_name;
  std::string workflow_url;
  std::string run_id;  // as given: GitHub's integer, or a Buildkite build UUID (≤ 64 characters)
  int64_t run_attempt = 1;
  std::string job_name;
  std::string check_run_id;
  std::string artifact_url;
  std::string callback_token;
  // payload.pull_request.head.sha or payload.after; a nightly's top-level pytorch_head_sha,
  // payload.head_sha or delivery_id.
  std::string head_sha;
  int64_t pr_number = 0;
  int64_t passed = 0, failed = 0, skipped = 0, total = 0;
  nlohmann::json failed_tests;     // capped list, or null
  nlohmann::json triage;           // validated verdict, or null
  std::vector<std::string> notes;  // what was truncated or dropped, returned to the caller

  bool is_self_report() const { return event_type == "nightly" || event_type == "periodic"; }
  std::string state_key(const std::string& repo) const;
};

// The outcome hash of a stored body, for rows written when the hash was of the body's bytes.
std::string outcome_hash_of(const std::string& body_text);

// nullopt-style: the error names the field (the caller answers 400).
std::variant<CallbackBody, std::string> parse_callback_body(const std::string& text);

// Empty if valid; otherwise why the verdict is dropped. A summary over 1,000 characters and more
// than 10 evidence entries are cut (upstream CRCR's caps), each cut named in `notes`.
std::string validate_triage_verdict(nlohmann::json& verdict, std::vector<std::string>* notes);

}  // namespace ootci
