#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/yaml_doc.h"

namespace ootci {

// CRCR's ci_providers.yml: OIDC tokens from CI systems other than GitHub Actions have no
// `repository` claim, so the claims that name the project map to owner/repo, optionally
// constrained by required claims (e.g. build_branch: [main], so fork builds of the pipeline cannot
// report as the repo). Keys, under providers.<provider>.repo_map, are the immutable ids:
// - buildkite: organization_id/pipeline_id (CRCR's);
// - gitlab: project_id (GitLab CI id_tokens);
// - circleci: <org id>/<project id>, as the token's sub names them
//   (org/<org>/project/<project>/user/<user>).
struct PipelineMapping {
  std::string repo;
  std::map<std::string, std::vector<std::string>> required_claims;
};

class CiProviders {
 public:
  static CiProviders parse(const YamlDoc& doc);
  static CiProviders load(const std::string& path);

  // The repo a token of `provider` (buildkite, gitlab or circleci) names, or an error message
  // (the caller answers 403).
  struct Identity {
    std::string repo;
    std::string error;
  };
  Identity identity(const std::string& provider, const nlohmann::json& claims) const;
  // Mappings over every provider.
  size_t size() const;

 private:
  // provider → key → mapping
  std::map<std::string, std::map<std::string, PipelineMapping>> maps_;
};

}  // namespace ootci
