#include "relay/ci_providers.h"

#include <fmt/format.h>

#include <algorithm>

namespace ootci {
namespace {

struct ProviderKind {
  const char* name;
  const char* what;      // in messages: "Buildkite pipeline"
  bool key_has_slash;    // the key is two ids joined by '/'
  const char* key_rule;  // in messages
};

constexpr ProviderKind kProviders[] = {
    {"buildkite", "Buildkite pipeline", true, "organization_id/pipeline_id"},
    {"gitlab", "GitLab project", false, "project_id"},
    {"circleci", "CircleCI project", true, "org_id/project_id"},
};

const ProviderKind* provider_kind(const std::string& name) {
  for (const auto& p : kProviders)
    if (name == p.name) return &p;
  return nullptr;
}

// A claim as text: strings as they are, GitLab's boolean and numeric claims as JSON writes them
// ("true", "42"), so required_claims compare them the way the file spells them.
std::string claim_text(const nlohmann::json& claims, const std::string& name) {
  auto it = claims.find(name);
  if (it == claims.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The key a token's claims name under its provider; "" when the token names none.
std::string key_of(const std::string& provider, const nlohmann::json& claims) {
  if (provider == "buildkite") {
    std::string org = claim_text(claims, "organization_id");
    std::string pipeline = claim_text(claims, "pipeline_id");
    return org.empty() || pipeline.empty() ? "" : org + "/" + pipeline;
  }
  if (provider == "gitlab") return claim_text(claims, "project_id");
  // CircleCI: sub is org/<org>/project/<project>/user/<user>; the project-id claim must agree.
  std::string sub = claim_text(claims, "sub");
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t slash = sub.find('/', start);
    parts.push_back(sub.substr(start, slash == std::string::npos ? slash : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() < 4 || parts[0] != "org" || parts[2] != "project" || parts[1].empty() ||
      parts[3].empty())
    return "";
  std::string project = claim_text(claims, "oidc.circleci.com/project-id");
  if (!project.empty() && project != parts[3]) return "";
  return parts[1] + "/" + parts[3];
}

}  // namespace

CiProviders CiProviders::parse(const YamlDoc& doc) {
  CiProviders out;
  if (doc.root.IsNull()) return out;
  if (!doc.root.IsMap()) yaml_fail(doc, doc.root, "", "expected a mapping");
  // The legacy top-level `buildkite:` section repeats the mapping for old readers; the
  // `providers.<provider>.repo_map` sections are authoritative.
  // Each level may be absent (nothing registered) but, when present, must be a mapping: indexing
  // a missing or scalar node would throw yaml-cpp's own exception instead of naming the line.
  auto child = [&](const YAML::Node& parent, const char* key, const std::string& path) {
    YAML::Node n = parent[key];
    if (n && !n.IsNull() && !n.IsMap()) yaml_fail(doc, n, path, "expected a mapping");
    return n;
  };
  YAML::Node providers = child(doc.root, "providers", "providers");
  if (!providers || providers.IsNull()) return out;
  for (const ProviderKind& kind : kProviders) {
    std::string base = std::string("providers.") + kind.name;
    YAML::Node provider = child(providers, kind.name, base);
    if (!provider || provider.IsNull()) continue;
    YAML::Node map = child(provider, "repo_map", base + ".repo_map");
    if (!map || map.IsNull()) continue;
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      std::string path = base + ".repo_map." + key;
      if (key.empty() || (kind.key_has_slash && key.find('/') == std::string::npos))
        yaml_fail(doc, it->first, path, fmt::format("expected {}", kind.key_rule));
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
      out.maps_[kind.name][key] = m;
    }
  }
  return out;
}

CiProviders CiProviders::load(const std::string& path) {
  return parse(load_yaml_file(path));
}

size_t CiProviders::size() const {
  size_t n = 0;
  for (const auto& [provider, map] : maps_) n += map.size();
  return n;
}

CiProviders::Identity CiProviders::identity(const std::string& provider,
                                            const nlohmann::json& claims) const {
  const ProviderKind* kind = provider_kind(provider);
  if (!kind) return {"", "unsupported CI provider " + provider};
  std::string not_registered = fmt::format("{} is not registered", kind->what);
  auto map = maps_.find(provider);
  if (map == maps_.end()) return {"", not_registered};
  std::string key = key_of(provider, claims);
  auto it = map->second.find(key);
  if (key.empty() || it == map->second.end()) return {"", not_registered};
  for (const auto& [claim, allowed] : it->second.required_claims) {
    std::string value = claim_text(claims, claim);
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      return {"", fmt::format("claim {} is not allowed for this {}", claim,
                              provider == "buildkite" ? "pipeline" : "project")};
  }
  return {it->second.repo, ""};
}

}  // namespace ootci
