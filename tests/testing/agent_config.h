#pragma once
// The files an `ootci agent` test or bench writes for the reference backend, so each states only
// what it changes.
#include <string>

namespace ootci {

// ootci.yaml: the reference backend in `backend_dir` with one upstream file (test_view_ops.py:
// 260 variants, ~10 s), a gate for the fixtures' `master` base, and callbacks to
// `<relay_url>/github/callback` with tokens from `token_command` (a YAML flow list).
// `backend_env` is backend.env (a YAML flow map).
std::string reference_backend_yaml(const std::string& backend_dir, const std::string& torch_root,
                                   const std::string& relay_url, const std::string& token_command,
                                   const std::string& backend_env = "{}");

// agent.yaml next to that ootci.yaml, listening on `port`, with `extra` appended.
std::string agent_yaml(int port, const std::string& extra = "");

// The relay's `downstreams:` section that sends `repo`'s dispatches to an agent on `port`.
std::string agent_downstream_yaml(const std::string& repo, int port);

}  // namespace ootci
