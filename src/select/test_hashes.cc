#include "select/test_hashes.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "base/git.h"
#include "base/scratch_dir.h"
#include "base/subprocess.h"
#include "plan/plan_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

std::map<std::string, std::string> string_map(const nlohmann::json& j, const char* key,
                                              const std::string& what) {
  std::map<std::string, std::string> out;
  if (!j.contains(key)) return out;
  const nlohmann::json& m = j[key];
  if (!m.is_object()) throw Error(fmt::format("{}: \"{}\" must be an object", what, key));
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string())
      throw Error(fmt::format("{}: \"{}\".\"{}\" must be a string", what, key, k));
    out[k] = v.get<std::string>();
  }
  return out;
}

// "test/test_x.py::Class::method" -> "test/test_x.py".
std::string file_of(const std::string& id) {
  return id.substr(0, id.find("::"));
}

// Runs argv to its end; throws Error with the tail of its output when it fails.
void run_or_throw(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& log,
                  const std::string& what) {
  SpawnOptions options;
  options.argv = argv;
  options.env = env;
  options.output_file = log;
  Subprocess p = Subprocess::spawn(options);
  int status = p.wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(fmt::format("{} failed (status {}):\n{}", what, status, read_file_tail(log, 2000)));
}

}  // namespace

TreeHashes parse_tree_hashes(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object())
    throw Error(fmt::format("{}: expected a JSON object with \"tests\" and \"helpers\"", what));
  TreeHashes t;
  t.tests = string_map(j, "tests", what);
  t.helpers = string_map(j, "helpers", what);
  t.errors = string_map(j, "errors", what);
  return t;
}

TreeHashes hash_test_tree(const std::string& python, const std::string& root,
                          const std::vector<std::string>& files, const std::string& scratch_dir) {
  if (!fs::is_directory(root)) throw Error(fmt::format("{}: not a folder", root));
  fs::create_directories(scratch_dir);
  std::string out = scratch_dir + "/hashes.json";
  std::string log = scratch_dir + "/hashes.log";
  fs::remove(out);
  fs::remove(log);
  std::vector<std::string> argv = {python, "-m", "ootci_torch.test_hashes", root, "-o", out};
  argv.insert(argv.end(), files.begin(), files.end());
  run_or_throw(argv, {{"PYTHONPATH", ootci_python_dir()}}, log,
               fmt::format("hashing the tests under {}", root));
  nlohmann::json j = nlohmann::json::parse(read_file_or_empty(out), nullptr, false);
  if (j.is_discarded()) throw Error(fmt::format("{}: not JSON", out));
  return parse_tree_hashes(j, out);
}

TestDelta compare_trees(const TreeHashes& from, const TreeHashes& to) {
  TestDelta d;
  std::set<std::string> broken;
  for (const auto& [file, e] : from.errors) {
    d.errors[file + " (from)"] = e;
    broken.insert(file);
  }
  for (const auto& [file, e] : to.errors) {
    d.errors[file + " (to)"] = e;
    broken.insert(file);
  }
  std::map<std::string, FileDelta> files;
  auto file_delta = [&](const std::string& relpath) -> FileDelta& {
    FileDelta& f = files[relpath];
    f.relpath = relpath;
    return f;
  };
  auto helpers_changed = [&](const std::string& relpath) {
    auto a = from.helpers.find(relpath), b = to.helpers.find(relpath);
    return a != from.helpers.end() && b != to.helpers.end() && a->second != b->second;
  };
  for (const auto& [id, hash] : to.tests) {
    std::string relpath = file_of(id);
    if (broken.count(relpath)) continue;
    FileDelta& f = file_delta(relpath);
    f.helpers_changed = helpers_changed(relpath);
    auto before = from.tests.find(id);
    if (before == from.tests.end()) {
      ++f.added;
      d.reasons[id] = kReasonNew;
    } else if (before->second != hash) {
      ++f.changed;
      d.reasons[id] = kReasonChanged;
    } else if (f.helpers_changed) {
      ++f.changed;
      d.reasons[id] = kReasonHelpers;
    } else {
      ++f.unchanged;
    }
  }
  for (const auto& [id, hash] : from.tests) {
    std::string relpath = file_of(id);
    if (broken.count(relpath) || to.tests.count(id)) continue;
    ++file_delta(relpath).removed;
    d.removed.push_back(id);
  }
  for (auto& [relpath, f] : files) {
    d.added += f.added;
    d.changed += f.changed;
    d.removed_count += f.removed;
    d.unchanged += f.unchanged;
    d.files.push_back(f);
  }
  return d;
}

nlohmann::json delta_selection(const TestDelta& d) {
  nlohmann::json bases = nlohmann::json::array();
  for (const auto& [id, reason] : d.reasons) bases.push_back(id);
  nlohmann::json changed_files = nlohmann::json::array();
  for (const auto& f : d.files)
    if (f.any_change()) changed_files.push_back(f.relpath);
  return {
      {"files", nlohmann::json::array()},
      {"tests", nlohmann::json::array()},
      {"bases", bases},
      {"reasons", d.reasons},
      {"changed_files", changed_files},
      {"removed", d.removed},
      {"counts",
       {{"new", d.added},
        {"changed", d.changed},
        {"removed", d.removed_count},
        {"unchanged", d.unchanged}}},
  };
}

std::map<std::string, std::vector<std::string>> test_names_by_file(
    const BackendConfig& backend, const nlohmann::json& plan,
    const std::function<void(const std::string& relpath, const std::string& why)>& unread) {
  std::map<std::string, std::vector<std::string>> out;
  ScratchDir scratch("lint");
  int n = 0;
  for (const std::string& root : {backend.torch_root, backend.device_root}) {
    std::vector<std::string> files;
    for (const auto& f : plan["files"]) {
      std::string path = f["path"], relpath = f["relpath"];
      if (path == root + "/" + relpath && !out.count(relpath)) files.push_back(relpath);
    }
    if (files.empty()) continue;
    TreeHashes hashes =
        hash_test_tree(backend.python, root, files, fmt::format("{}/{}", scratch.path(), n++));
    for (const auto& relpath : files) out[relpath];  // a file without tests lists none
    for (const auto& [id, hash] : hashes.tests) {
      size_t file_end = id.find("::");
      out[id.substr(0, file_end)].push_back(id.substr(id.rfind("::") + 2));
    }
    for (const auto& [relpath, error] : hashes.errors) {
      unread(relpath, error);
      out.erase(relpath);
    }
  }
  return out;
}

void export_git_tests(const std::string& repo, const std::string& rev, const std::string& into) {
  fs::create_directories(into);
  std::string tar = into + "/.tests.tar";
  std::string log = into + "/.export.log";
  git_output(repo, {"archive", "--format=tar", "-o", tar, rev, "test"});
  run_or_throw({"tar", "-xf", tar, "-C", into}, {}, log, fmt::format("unpacking {}", tar));
  fs::remove(tar);
  fs::remove(log);
}

}  // namespace ootci
