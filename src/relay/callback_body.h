#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "base/callback_caps.h"
#include "base/utf8.h"

namespace ootci {

// A callback body (schema version "1"), as CRCR's callback action sends it, plus the additive
// failed_tests_detail and triage_verdict.
struct CallbackBody {
  nlohmann::json json;     // the parsed body
  std::string raw;         // the body as received
  std::string body_hash;   // sha256 of the body bytes: an exact repeat has the same hash
  std::string event_type;  // pull_request (default), push, nightly, periodic
  std::string delivery_id;
  std::string status;  // in_progress or completed
  std::string conclusion;
  std::string workflow_name;
  std::string workflow_url;
  int64_t run_id = 0;
  int64_t run_attempt = 1;
  std::string job_name;
  std::string check_run_id;
  std::string artifact_url;
  std::string callback_token;
  std::string head_sha;  // payload.pull_request.head.sha, payload.after, or payload.head_sha
  int64_t pr_number = 0;
  int64_t passed = 0, failed = 0, skipped = 0, total = 0;
  nlohmann::json failed_tests;     // capped list, or null
  nlohmann::json triage;           // validated verdict, or null
  std::vector<std::string> notes;  // what was truncated or dropped, returned to the caller

  bool is_self_report() const { return event_type == "nightly" || event_type == "periodic"; }
  std::string state_key(const std::string& repo) const;
};

// nullopt-style: the error names the field (the caller answers 400).
std::variant<CallbackBody, std::string> parse_callback_body(const std::string& text);

// Empty if valid; otherwise why the verdict is dropped.
std::string validate_triage_verdict(const nlohmann::json& verdict);

}  // namespace ootci
