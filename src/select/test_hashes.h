#pragma once
// `ootci select delta`: which upstream tests are new, changed or removed between two versions of
// the test suite (docs/select.md), so only those need a fresh look. Test functions are hashed by
// python/ootci_torch/test_hashes.py (normalized source: comments and formatting do not count).
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

// One tree's hashes: test ids are "relpath::Class::method" or "relpath::function" (the config
// names, "bases", of the variants that run).
struct TreeHashes {
  std::map<std::string, std::string> tests;    // test id -> hash of its source
  std::map<std::string, std::string> helpers;  // relpath -> hash of the rest of the file
  std::map<std::string, std::string> errors;   // relpath -> why it could not be read or parsed
};

// Parses test_hashes.py's output; throws Error naming `what` on anything malformed.
TreeHashes parse_tree_hashes(const nlohmann::json& j, const std::string& what);

// Runs `python -m ootci_torch.test_hashes root [files...]`. Without files, every
// test/**/test_*.py under root. `scratch_dir` holds its output and log.
TreeHashes hash_test_tree(const std::string& python, const std::string& root,
                          const std::vector<std::string>& files, const std::string& scratch_dir);

// The base names of the tests of every file the plan lists under the upstream test tree or the
// device's, by relpath, read from the source (nothing is imported or run). A file that cannot be
// read is left out and passed to `unread` with the reason. For `ootci plan lint`.
std::map<std::string, std::vector<std::string>> test_names_by_file(
    const BackendConfig& backend, const nlohmann::json& plan,
    const std::function<void(const std::string& relpath, const std::string& why)>& unread);

inline constexpr const char* kReasonNew = "new test";
inline constexpr const char* kReasonChanged = "changed test";
inline constexpr const char* kReasonHelpers = "file-level helpers changed";

struct FileDelta {
  std::string relpath;
  int added = 0, changed = 0, removed = 0, unchanged = 0;  // changed includes helper changes
  bool helpers_changed = false;
  bool any_change() const { return added || changed || removed; }
};

struct TestDelta {
  std::vector<FileDelta> files;                // every file with tests in either tree, by relpath
  std::map<std::string, std::string> reasons;  // new or changed test id -> reason
  std::vector<std::string> removed;            // test ids only in `from`
  std::map<std::string, std::string> errors;   // "relpath (from|to)" -> error; not compared
  int added = 0, changed = 0, removed_count = 0, unchanged = 0;
};

// A file that fails to parse in either tree is left out of the counts and reported in `errors`.
TestDelta compare_trees(const TreeHashes& from, const TreeHashes& to);

// The selection `ootci run --select` reads: {"files": [], "tests": [], "bases": [new and changed
// ids], "reasons": {id: reason}, "changed_files": [...], "removed": [...], "counts": {...}}.
nlohmann::json delta_selection(const TestDelta& delta);

// Extracts `test/` of git revision `rev` of `repo` into `into` (git archive, then tar).
void export_git_tests(const std::string& repo, const std::string& rev, const std::string& into);

}  // namespace ootci
