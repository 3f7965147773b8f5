#include "job/agent_dispatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "net/crypto.h"

namespace ootci {
namespace {

// Deeper than any webhook GitHub sends (about 8), and shallow enough that the recursion of
// json::dump, which stores the client_payload, stays far from the end of a thread's stack.
constexpr size_t kMaxNesting = 128;

// How deep arrays and objects nest in JSON text; brackets inside strings do not count.
size_t nesting_depth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

AgentDispatch parse_agent_dispatch(const std::string& secret, const std::string& signature,
                                   const std::string& raw_body, const GatePolicy& policy,
                                   const std::string& device_type,
                                   const BranchHeadResolver& branch_head) {
  AgentDispatch d;
  auto refuse = [&](int status, const std::string& why) {
    d.status = status;
    d.detail = why;
    return d;
  };
  if (signature.empty() || !constant_time_equal(signature, github_signature(secret, raw_body)))
    return refuse(401, "invalid X-Ootci-Signature-256");
  if (nesting_depth(raw_body) > kMaxNesting)
    return refuse(400, fmt::format("body: nested deeper than {} levels", kMaxNesting));
  auto body = nlohmann::json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return refuse(400, "body is not a JSON object");
  if (!body.contains("client_payload") || !body["client_payload"].is_object())
    return refuse(400, "client_payload: missing or not an object");
  const nlohmann::json& payload = body["client_payload"];
  if (!payload.contains("delivery_id") || !payload["delivery_id"].is_string())
    return refuse(400, "client_payload.delivery_id: missing or not a string");
  if (body.contains("event_type") && !body["event_type"].is_string())
    return refuse(400, "event_type: not a string");

  try {
    d.gate = decide_gate(policy, device_type, payload, branch_head);
  } catch (const Error& e) {
    return refuse(400, e.what());
  }
  AgentJob& job = d.job;
  job.delivery_id = payload["delivery_id"].get<std::string>();
  job.event_type = body.value("event_type", d.gate.event);
  job.client_payload = payload.dump();
  job.supersede_key = d.gate.supersede_key;
  job.should_build = d.gate.should_build;
  job.reason = d.gate.reason;
  job.upstream_sha = d.gate.upstream_sha;
  job.pr_number = d.gate.pr_number;
  job.base_sha = d.gate.base_sha;
  job.state = d.gate.should_build ? JobState::kQueued : JobState::kSkipped;
  return d;
}

}  // namespace ootci
