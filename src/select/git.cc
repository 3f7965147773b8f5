#include "select/git.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "base/scratch_dir.h"
#include "base/subprocess.h"
#include "base/text.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

std::string unquote_path(std::string p) {
  while (!p.empty() && (p.back() == '\t' || p.back() == '\r')) p.pop_back();
  if (p.size() < 2 || p.front() != '"' || p.back() != '"') return p;
  std::string out;
  for (size_t i = 1; i + 1 < p.size(); ++i) {
    if (p[i] != '\\' || i + 2 >= p.size()) {
      out += p[i];
      continue;
    }
    char c = p[++i];
    if (c >= '0' && c <= '7' && i + 2 < p.size()) {
      out += static_cast<char>(std::stoi(p.substr(i, 3), nullptr, 8));
      i += 2;
    } else {
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
  }
  return out;
}

// "a/path" -> "path"; "/dev/null" -> "".
std::string side_path(const std::string& raw) {
  std::string p = unquote_path(raw);
  if (p == "/dev/null") return "";
  if (p.size() > 2 && (p[0] == 'a' || p[0] == 'b') && p[1] == '/') return p.substr(2);
  return p;
}

std::string prefix_of(const std::string& dir) {
  std::string prefix = git_output(dir, {"rev-parse", "--show-prefix"});
  while (!prefix.empty() && prefix.back() == '\n') prefix.pop_back();
  return prefix;
}

}  // namespace

std::pair<std::string, std::string> parse_revision_range(const std::string& range,
                                                         const std::string& flag) {
  if (range.find("...") != std::string::npos)
    throw Error(
        fmt::format("{} {}: give FROM..TO (two dots), not a symmetric difference", flag, range));
  size_t dots = range.find("..");
  std::string from = dots == std::string::npos ? range : range.substr(0, dots);
  std::string to = dots == std::string::npos ? "HEAD" : range.substr(dots + 2);
  if (from.empty() || to.empty())
    throw Error(fmt::format("{} {}: expected FROM..TO (or FROM, meaning FROM..HEAD)", flag, range));
  return {from, to};
}

std::string resolve_commit(const std::string& dir, const std::string& rev,
                           const std::string& flag) {
  try {
    std::string sha = git_output(dir, {"rev-parse", "--verify", "--quiet", rev + "^{commit}"});
    while (!sha.empty() && sha.back() == '\n') sha.pop_back();
    return sha;
  } catch (const Error&) {
    throw Error(fmt::format("{}: {} is not a commit in {}", flag, rev, dir));
  }
}

std::vector<FileDiff> parse_unified_diff(const std::string& text) {
  std::vector<FileDiff> out;
  static const std::regex hunk(R"(^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@)");
  std::istringstream in(text);
  std::string line;
  FileDiff* f = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("diff --git ", 0) == 0) {
      out.emplace_back();
      f = &out.back();
      // "diff --git a/x b/x": exact for paths without " b/"; the ---/+++ lines refine it.
      std::string rest = line.substr(11);
      size_t split = rest.find(" b/");
      if (rest.size() > 0 && rest[0] == '"') split = rest.find("\" ") + 1;
      if (split != std::string::npos && split > 0) {
        f->old_path = side_path(rest.substr(0, split));
        f->new_path = side_path(rest.substr(split + 1));
      }
      continue;
    }
    if (!f) continue;
    if (line.rfind("new file mode", 0) == 0) {
      f->old_path.clear();
    } else if (line.rfind("deleted file mode", 0) == 0) {
      f->new_path.clear();
    } else if (line.rfind("--- ", 0) == 0) {
      f->old_path = side_path(line.substr(4));
    } else if (line.rfind("+++ ", 0) == 0) {
      f->new_path = side_path(line.substr(4));
    } else if (line.rfind("Binary files ", 0) == 0 || line.rfind("GIT binary patch", 0) == 0) {
      f->binary = true;
    } else if (line.rfind("@@ ", 0) == 0) {
      std::smatch m;
      if (!std::regex_search(line, m, hunk))
        throw Error(fmt::format("git diff: cannot read the hunk header '{}'", line));
      int old_start = std::stoi(m[1]), old_count = m[2].matched ? std::stoi(m[2]) : 1;
      int new_start = std::stoi(m[3]), new_count = m[4].matched ? std::stoi(m[4]) : 1;
      if (old_count > 0) f->removed.emplace_back(old_start, old_start + old_count - 1);
      if (new_count > 0) f->added.emplace_back(new_start, new_start + new_count - 1);
    }
  }
  return out;
}

std::vector<FileDiff> git_diff(const std::string& dir, const std::string& from,
                               const std::string& to, const std::vector<std::string>& paths) {
  std::vector<std::string> args = {
      "diff", "--no-color", "--no-ext-diff", "--no-renames", "--unified=0", "--relative", from,
      to,     "--"};
  if (paths.empty()) args.push_back(".");
  args.insert(args.end(), paths.begin(), paths.end());
  return parse_unified_diff(git_output(dir, args));
}

std::map<std::string, std::string> git_files_at(const std::string& dir, const std::string& rev,
                                                bool (*wanted)(const std::string& path)) {
  std::string listing = git_output(dir, {"ls-tree", "-r", "-z", "--name-only", rev});
  std::vector<std::string> paths;
  for (size_t begin = 0; begin < listing.size();) {
    size_t end = listing.find('\0', begin);
    if (end == std::string::npos) end = listing.size();
    std::string p = listing.substr(begin, end - begin);
    if (!p.empty() && wanted(p)) paths.push_back(p);
    begin = end + 1;
  }
  std::map<std::string, std::string> out;
  if (paths.empty()) return out;
  // One `git archive` of the folder's tree instead of a process per file.
  std::string top = git_output(dir, {"rev-parse", "--show-toplevel"});
  while (!top.empty() && top.back() == '\n') top.pop_back();
  std::string prefix = prefix_of(dir);
  ScratchDir scratch("git");
  std::string tar = scratch.path() + "/tree.tar";
  git_output(top, {"archive", "--format=tar", "-o", tar,
                   prefix.empty() ? rev + "^{tree}" : rev + ":" + prefix});
  std::string out_dir = scratch.path() + "/tree";
  fs::create_directories(out_dir);
  SpawnOptions extract;
  extract.argv = {"tar", "-xf", tar, "-C", out_dir};
  extract.new_process_group = false;
  if (CapturedRun r = run_captured(extract); !r.ok())
    throw Error(fmt::format("tar -xf {}: {}", tar, trim(r.err)));
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_regular_file(out_dir + "/" + p, ec)) out[p] = read_file_or_empty(out_dir + "/" + p);
  }
  return out;
}

std::optional<std::string> git_file_at(const std::string& dir, const std::string& rev,
                                       const std::string& path) {
  std::string listed = git_output(dir, {"ls-tree", "--name-only", rev, "--", path});
  if (listed.empty()) return std::nullopt;
  return git_output(dir, {"show", rev + ":./" + path});
}

}  // namespace ootci
