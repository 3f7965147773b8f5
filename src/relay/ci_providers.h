#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/yaml_doc.h"

namespace ootci {

// CRCR's ci_providers.yml: Buildkite OIDC tokens have no `repository` claim, so the immutable
// organization_id/pipeline_id pair maps to owner/repo, optionally constrained by required claims
// (e.g. build_branch: [main], so fork builds of the pipeline cannot report as the repo).
struct PipelineMapping {
  std::string repo;
  std::map<std::string, std::vector<std::string>> required_claims;
};

class CiProviders {
 public:
  static CiProviders parse(const YamlDoc& doc);
  static CiProviders load(const std::string& path);

  // The repo for a Buildkite token's claims, or an error message (the caller answers 403).
  struct Identity {
    std::string repo;
    std::string error;
  };
  Identity buildkite_identity(const nlohmann::json& claims) const;
  size_t size() const { return buildkite_.size(); }

 private:
  std::map<std::string, PipelineMapping> buildkite_;  // "org_id/pipeline_id" → mapping
};

}  // namespace ootci
