// CRCR's ci_providers.yml, and a Buildkite token's claims checked against what it accepted.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/yaml_doc.h"
#include "fuzz/fuzz_input.h"
#include "relay/ci_providers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto p = ootci::CiProviders::parse(
        ootci::load_yaml_text("ci_providers.yml", ootci::fuzz::text(data, size)));
    p.buildkite_identity(
        {{"organization_slug", "pytorch"}, {"pipeline_slug", "ci"}, {"build_branch", "main"}});
  } catch (const ootci::Error&) {
  }
  return 0;
}
