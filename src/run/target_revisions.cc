#include "run/target_revisions.h"

#include <algorithm>

#include "base/git.h"
#include "base/subprocess.h"
#include "base/text.h"

namespace ootci {
namespace {

// The command's first output line, or "" when it fails: a missing revision only means that
// attribution cannot compare that target, never that the run fails.
std::string first_line_of(const std::vector<std::string>& argv) {
  if (argv.empty()) return "";
  std::string out = output_or_empty(argv);
  return out.substr(0, std::min(out.find('\n'), out.size()));
}

std::string head_commit(const std::string& repo) {
  if (repo.empty()) return "";
  return trim(try_git_output(repo, {"rev-parse", "--verify", "-q", "HEAD^{commit}"}).value_or(""));
}

}  // namespace

TargetRevisions current_target_revisions(const BackendConfig& backend) {
  const AttributeSettings& a = backend.attribute;
  return {head_commit(a.backend_repo), head_commit(a.tests_repo), first_line_of(a.core_revision)};
}

nlohmann::json target_revisions_json(const TargetRevisions& r) {
  return {{"backend", r.backend}, {"tests", r.tests}, {"core", r.core}};
}

std::optional<TargetRevisions> manifest_target_revisions(const nlohmann::json& manifest) {
  auto it = manifest.find("targets");
  if (it == manifest.end() || !it->is_object()) return std::nullopt;
  auto text = [&](const char* key) {
    auto v = it->find(key);
    return v != it->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  return TargetRevisions{text("backend"), text("tests"), text("core")};
}

}  // namespace ootci
