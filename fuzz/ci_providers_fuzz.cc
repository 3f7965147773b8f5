// CRCR's ci_providers.yml, and Buildkite, GitLab and CircleCI claims checked against it.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/yaml_doc.h"
#include "fuzz/fuzz_input.h"
#include "relay/ci_providers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto p = ootci::CiProviders::parse(
        ootci::load_yaml_text("ci_providers.yml", ootci::fuzz::text(data, size)));
    p.identity("buildkite",
               {{"organization_id", "pytorch"}, {"pipeline_id", "ci"}, {"build_branch", "main"}});
    p.identity("gitlab", {{"project_id", "42"}, {"ref_protected", true}});
    p.identity("circleci", {{"sub", "org/o/project/p/user/u"}});
  } catch (const ootci::Error&) {
  }
  return 0;
}
