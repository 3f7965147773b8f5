#include "plan/path_glob.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <functional>

namespace fs = std::filesystem;

namespace ootci {

// Hand-written because glob(3) has no `**`; fnmatch(3) still matches single components.

bool has_glob_chars(const std::string& pattern) {
  return pattern.find_first_of("*?[") != std::string::npos;
}

namespace {

std::vector<std::string> split_components(const std::string& pattern) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t slash = pattern.find('/', start);
    if (slash == std::string::npos) slash = pattern.size();
    if (slash > start) parts.push_back(pattern.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Children of `dir` whose names match one glob component, in name order.
std::vector<fs::path> matching_children(const fs::path& dir, const std::string& component) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (fnmatch(component.c_str(), name.c_str(), FNM_PERIOD) == 0) out.push_back(it->path());
  }
  return out;
}

// `dir` and every folder below it, hidden ones excepted; symlinked folders are not entered, so
// a link cycle cannot loop.
std::vector<fs::path> folders_below(const fs::path& dir) {
  std::vector<fs::path> out = {dir};
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    bool hidden = it->path().filename().string().rfind('.', 0) == 0;
    bool real_dir = it->is_directory(ec) && !it->is_symlink(ec);
    if (hidden || !real_dir) {
      if (real_dir) it.disable_recursion_pending();
      continue;
    }
    out.push_back(it->path());
  }
  return out;
}

void expand_from(const fs::path& base, const std::vector<std::string>& parts, size_t i,
                 std::vector<std::string>& out) {
  if (i == parts.size()) {
    if (path_exists(base)) out.push_back(base.string());
    return;
  }
  const std::string& part = parts[i];
  bool last = i + 1 == parts.size();
  if (part == "**") {
    if (!is_dir(base)) return;
    for (const auto& dir : folders_below(base)) expand_from(dir, parts, i + 1, out);
  } else if (!has_glob_chars(part)) {
    expand_from(base / part, parts, i + 1, out);
  } else {
    if (!is_dir(base)) return;
    for (const auto& child : matching_children(base, part))
      if (last || is_dir(child)) expand_from(child, parts, i + 1, out);
  }
}

}  // namespace

std::vector<std::string> expand_glob(const std::string& pattern) {
  std::vector<std::string> out;
  fs::path root = pattern.rfind('/', 0) == 0 ? fs::path("/") : fs::path(".");
  expand_from(root, split_components(pattern), 0, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());  // `**/**` reaches a path twice
  return out;
}

}  // namespace ootci
