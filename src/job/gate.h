#pragma once
// `ootci gate`: whether a CRCR dispatch deserves a build, and which upstream SHA to build
// (docs/dispatch.md).
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/backend_config.h"

namespace ootci {

struct GateDecision {
  bool should_build = false;
  std::string reason;        // one line, always set: why it builds or why not
  std::string upstream_sha;  // set when should_build
  int64_t pr_number = 0;     // 0 for pushes and nightlies
  std::string event;         // pull_request | push | nightly
  std::string action;        // the pull_request action, "" otherwise
  bool landed = false;       // closed and (merged or the merged label)
  // "<upstream repo>#<pr>" for PRs, "<repo>@<ref>" for pushes: a newer dispatch with the same
  // key supersedes older work (the agent's cancellation, the workflow's concurrency group).
  std::string supersede_key;
  // An open PR's pull_request.base.sha ("" for pushes, nightlies, landed PRs, and a payload
  // without it): base_sha..upstream_sha is what the PR changes, for a staged selection.
  std::string base_sha;
};

// How a dispatch's tests are chosen: "staged" (`ootci select changed --staged` over
// base_sha..upstream_sha, run in two waves) for an open PR when select.pull_requests is staged;
// "full" (the whole plan) otherwise.
std::string dispatch_selection(const GateDecision& decision, const SelectSettings& select);

// Resolves a branch head: (repo, branch) -> SHA, or nullopt when it cannot be resolved.
// The default runs policy.base_head_command (git ls-remote when empty).
using BranchHeadResolver =
    std::function<std::optional<std::string>(const std::string& repo, const std::string& branch)>;
BranchHeadResolver command_branch_head_resolver(const GatePolicy& policy);

// `client_payload` is CRCR's {event_type, delivery_id, payload[, callback_token]}. Throws Error
// naming the JSON path when a field the decision needs is missing or has the wrong type.
GateDecision decide_gate(const GatePolicy& policy, const std::string& device_type,
                         const nlohmann::json& client_payload,
                         const BranchHeadResolver& branch_head);

// --nightly: runs policy.nightly_command and extracts the SHA with nightly_sha_pattern.
GateDecision decide_nightly(const GatePolicy& policy);

// should_build=..., reason=..., upstream_sha=..., pr_number=..., event=..., action=...,
// landed=..., supersede_key=..., base_sha=... : one `key=value` line each, as $GITHUB_OUTPUT wants
// them; with `select`, also selection=staged|full (dispatch_selection).
std::string format_gate_outputs(const GateDecision& decision,
                                const SelectSettings* select = nullptr);

}  // namespace ootci
