#pragma once
// What `ootci select changed` asks git: revisions, diffs with line ranges, and file contents at a
// revision. Every failure is an Error naming the git command and what git said.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/git.h"

namespace ootci {

// "A..B" -> {A, B}; "A" -> {A, HEAD}. Throws on "A...B" or an empty side.
std::pair<std::string, std::string> parse_revision_range(const std::string& range,
                                                         const std::string& flag);
// The full commit id of `rev`; an Error naming `flag` when it is not a commit of the repo.
std::string resolve_commit(const std::string& dir, const std::string& rev, const std::string& flag);

// One file of a `git diff --unified=0`: paths are relative to the folder the diff ran in;
// "" for /dev/null (an added or removed file). Line ranges are 1-based and inclusive.
struct FileDiff {
  std::string old_path, new_path;
  bool binary = false;
  std::vector<std::pair<int, int>> removed;  // old-side lines
  std::vector<std::pair<int, int>> added;    // new-side lines
  const std::string& path() const { return new_path.empty() ? old_path : new_path; }
  bool is_added() const { return old_path.empty(); }
  bool is_removed() const { return new_path.empty(); }
  std::string status() const {
    return is_added() ? "added" : is_removed() ? "removed" : "modified";
  }
};
std::vector<FileDiff> parse_unified_diff(const std::string& text);

// `git diff --unified=0 --no-renames --relative from to -- paths` run in `dir` (paths relative
// to `dir`; none: everything under it).
std::vector<FileDiff> git_diff(const std::string& dir, const std::string& from,
                               const std::string& to, const std::vector<std::string>& paths = {});

// The files under `dir` at `rev` (paths relative to `dir`) that `wanted` accepts, with their
// contents.
std::map<std::string, std::string> git_files_at(const std::string& dir, const std::string& rev,
                                                bool (*wanted)(const std::string& path));
// One file's content at `rev` (path relative to `dir`); nullopt when it does not exist there.
std::optional<std::string> git_file_at(const std::string& dir, const std::string& rev,
                                       const std::string& path);

}  // namespace ootci
