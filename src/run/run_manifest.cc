#include "run/run_manifest.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file_text.h"
#include "base/git.h"
#include "base/sha256.h"
#include "base/subprocess.h"
#include "base/text.h"
#include "base/time.h"
#include "plan/python_versions.h"
#include "run/target_revisions.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

// The commit, with "-dirty" when the work tree has changes, so a manifest never claims a commit
// that is not what ran.
std::string git_revision(const std::string& dir) {
  return trim(try_git_output(dir, {"describe", "--always", "--dirty", "--abbrev=40"}).value_or(""));
}

// A dirty backend checkout also names its uncommitted changes ("<sha>-dirty+<digest>"), so two
// different edits of the same commit are two revisions (`ootci discover` re-runs on either).
std::string backend_git_revision(const std::string& dir) {
  std::string rev = git_revision(dir);
  const std::string dirty = "-dirty";
  if (rev.size() < dirty.size() || rev.compare(rev.size() - dirty.size(), dirty.size(), dirty))
    return rev;
  // The diff under device_root only: a backend kept in a larger repository (examples/ here) is
  // not a new revision whenever a file beside it changes.
  std::string diff = try_git_output(dir, {"diff", "HEAD", "--binary", "--", "."}).value_or("");
  return rev + "+" + sha256_hex(diff).substr(0, 16);
}

// Not a git checkout: a digest of the backend's files, so two manifests still say whether the
// same backend ran. Hidden folders and the workspace are left out; very large trees are not hashed.
std::string tree_digest(const std::string& dir, const std::string& workspace) {
  constexpr uintmax_t kMaxBytes = 512ull << 20;
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    // Hidden folders, the workspace and Python's byte-code caches (derived from the sources, and
    // written by the very imports a run does) are not the backend's revision.
    if (it->is_directory(ec) && (p.filename().string().rfind('.', 0) == 0 || p == workspace ||
                                 p.filename() == "__pycache__")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  uintmax_t total = 0;
  std::string listing;
  for (const auto& f : files) {
    total += fs::file_size(f, ec);
    if (total > kMaxBytes) return "unknown (not a git checkout, over 512 MB)";
    listing +=
        fs::relative(f, dir).string() + " " + sha256_hex(read_file_or_empty(f.string())) + "\n";
  }
  return "sha256:" + sha256_hex(listing);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return trim(line.substr(line.find(':') + 2));
  return "";
}

}  // namespace

std::string backend_revision(const BackendConfig& backend) {
  std::string rev = backend_git_revision(backend.device_root);
  return rev.empty() ? tree_digest(backend.device_root, backend.workspace) : rev;
}

nlohmann::json build_manifest(const BackendConfig& backend, const nlohmann::json& plan,
                              const std::string& plan_path, const RunInfo& run) {
  PythonVersions versions = probe_python_versions(backend);
  const std::string& python = versions.python;
  const std::string& torch = versions.torch;
  // The upstream tree is a git checkout, or a source package unpacked by scripts/setup, whose
  // marker names the checked tarball.
  std::string upstream_revision = git_revision(backend.torch_root);
  if (upstream_revision.empty()) {
    std::string marker = read_file_or_empty(backend.torch_root + "/.ootci-verified");
    upstream_revision = marker.empty() ? "" : "sha256:" + marker.substr(0, marker.find(' '));
  }
  std::string suite;
  for (const auto& f : plan["files"])
    suite += f["relpath"].get<std::string>() + ":" + f["sha256"].get<std::string>() + "\n";
  struct utsname u {};
  uname(&u);
  nlohmann::json m = {
      {"run_id", run.id},
      {"backend", backend.name},
      {"device_type", backend.device_type},
      {"upstream",
       {{"torch_root", backend.torch_root},
        {"revision", upstream_revision},
        {"torch_version", torch},
        {"suite_sha256", sha256_hex(suite)}}},
      {"backend_revision", backend_revision(backend)},
      {"targets", target_revisions_json(current_target_revisions(backend))},
      {"plan_sha256", sha256_hex(read_file_or_empty(plan_path))},
      {"config_hash", run.config_hash},
      {"shard", run.shard.empty() ? nlohmann::json() : nlohmann::json(run.shard)},
      {"python", python},
      {"os", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
      {"cpu", cpu_model()},
      {"started", iso8601_utc(run.started_ms)},
      {"ended", nullptr},
  };
  if (!backend.root.empty()) m["python_root"] = backend.root;  // backend.root: Python ran there
  return m;
}

void finalize_manifest(nlohmann::json& manifest, int64_t ended_ms) {
  manifest["ended"] = iso8601_utc(ended_ms);
}

}  // namespace ootci
