#include "relay/ci_providers.h"

#include <fmt/format.h>

#include <algorithm>

namespace ootci {

CiProviders CiProviders::parse(const YamlDoc& doc) {
  CiProviders out;
  if (doc.root.IsNull()) return out;
  if (!doc.root.IsMap()) yaml_fail(doc, doc.root, "", "expected a mapping");
  // The legacy top-level `buildkite:` section repeats the mapping for old readers; the
  // `providers.buildkite.repo_map` section is authoritative.
  // Each level may be absent (nothing registered) but, when present, must be a mapping: indexing
  // a missing or scalar node would throw yaml-cpp's own exception instead of naming the line.
  auto child = [&](const YAML::Node& parent, const char* key, const char* path) {
    YAML::Node n = parent[key];
    if (n && !n.IsNull() && !n.IsMap()) yaml_fail(doc, n, path, "expected a mapping");
    return n;
  };
  YAML::Node providers = child(doc.root, "providers", "providers");
  if (!providers || providers.IsNull()) return out;
  YAML::Node buildkite = child(providers, "buildkite", "providers.buildkite");
  if (!buildkite || buildkite.IsNull()) return out;
  YAML::Node map = child(buildkite, "repo_map", "providers.buildkite.repo_map");
  if (!map || map.IsNull()) return out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.Scalar();
    std::string path = "providers.buildkite.repo_map." + key;
    if (key.find('/') == std::string::npos)
      yaml_fail(doc, it->first, path, "expected organization_id/pipeline_id");
    PipelineMapping m;
    if (it->second.IsScalar()) {
      m.repo = it->second.Scalar();
    } else if (it->second.IsMap()) {
      YamlMap entry(doc, it->second, path);
      m.repo = entry.str("repo").value_or("");
      if (auto rc = entry.map("required_claims")) {
        for (const std::string& claim : rc->keys()) {
          auto values = rc->str_list(claim);
          m.required_claims[claim] = values.value_or(std::vector<std::string>{});
        }
        rc->finish();
      }
      entry.finish();
    } else {
      yaml_fail(doc, it->second, path, "expected owner/repo or {repo, required_claims}");
    }
    if (m.repo.find('/') == std::string::npos)
      yaml_fail(doc, it->second, path, fmt::format("'{}' is not an owner/repo name", m.repo));
    out.buildkite_[key] = m;
  }
  return out;
}

CiProviders CiProviders::load(const std::string& path) {
  return parse(load_yaml_file(path));
}

CiProviders::Identity CiProviders::buildkite_identity(const nlohmann::json& claims) const {
  std::string org = claims.value("organization_id", "");
  std::string pipeline = claims.value("pipeline_id", "");
  auto it = buildkite_.find(org + "/" + pipeline);
  if (org.empty() || pipeline.empty() || it == buildkite_.end())
    return {"", "Buildkite pipeline is not registered"};
  for (const auto& [claim, allowed] : it->second.required_claims) {
    std::string value =
        claims.contains(claim) && claims[claim].is_string() ? claims[claim].get<std::string>() : "";
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      return {"", fmt::format("claim {} is not allowed for this pipeline", claim)};
  }
  return {it->second.repo, ""};
}

}  // namespace ootci
