#pragma once
// The external agent hook of `ootci select propose` (docs/select.md, "Agent hook"): a command
// from ootci.yaml's select.agent_command reads one upstream file's evidence bundle on stdin and
// prints bucket proposals; every proposal is checked against the evidence before it replaces the
// deterministic bucket.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapt/bucket.h"
#include "discover/variant_evidence.h"

namespace ootci {

constexpr int kAgentBundleVersion = 1;

// The bundle for one file. `buckets[i]` holds the deterministic buckets of evidence.bases[i]'s
// variants; `upstream_text` is the upstream file's source (for each test's source text).
nlohmann::json agent_bundle(const FileEvidence& evidence,
                            const std::vector<std::vector<Bucket>>& buckets,
                            const std::string& upstream_text, const Capabilities& caps);

// Runs the command with the bundle on stdin and returns what it printed, parsed. Throws Error when
// it cannot start, times out, exits non-zero, or prints no JSON object.
nlohmann::json run_agent(const std::vector<std::string>& argv, const nlohmann::json& bundle,
                         int timeout_s);

struct AgentVerdict {
  std::string where;    // "proposals[2]"
  std::string summary;  // "TestX::test_a dtype=complex64 -> xfail"
  bool accepted = false;
  std::string why;  // why it was rejected
  size_t variants = 0;
};

// Checks each proposal of the answer against the evidence; accepted ones replace the buckets of
// the variants they select (later proposals win over earlier ones). Throws Error when the answer
// is not {"proposals": [...]}.
std::vector<AgentVerdict> apply_agent_answer(const nlohmann::json& answer,
                                             const FileEvidence& evidence,
                                             std::vector<std::vector<Bucket>>& buckets);

// The source of `method` (in `cls`, or at module level when cls is empty) with its decorators,
// from Python source text by indentation; "" when it is not defined there.
std::string python_test_source(const std::string& file_text, const std::string& cls,
                               const std::string& method);

}  // namespace ootci
