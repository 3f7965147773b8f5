// Upstream PyTorch commit range -> changed plan files, touched ops or the full plan
// (docs/select.md, "Upstream changes").
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "evidence/source_text.h"
#include "select/changed.h"
#include "select/dtype_scope.h"
#include "select/git.h"
#include "select/native_functions.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

const std::string kNative = "aten/src/ATen/native/";
const std::string kNativeFunctions = "aten/src/ATen/native/native_functions.yaml";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Upstream files whose change cannot alter a test's result on an out-of-tree device.
std::string upstream_file_ignored_because(const std::string& path) {
  fs::path p(path);
  std::string first = p.begin() != p.end() ? p.begin()->string() : "";
  std::string ext = p.extension().string();
  if (first == ".github" || first == ".circleci" || first == ".ci" || first == ".jenkins" ||
      first == ".devcontainer")
    return "CI configuration";
  if (first == "docs" || ext == ".md" || ext == ".rst" || path == "CODEOWNERS" ||
      path == "LICENSE" || path == "NOTICE" || path == ".gitignore" || path == ".lintrunner.toml" ||
      path == ".flake8" || path == ".clang-format" || path == ".clang-tidy")
    return "documentation or repository metadata";
  if (starts_with(path, kNative)) {
    // Kernels for other devices never run on this one (the device's fallback runs CPU kernels).
    std::string rest = path.substr(kNative.size());
    for (const char* device : {"cuda/", "hip/", "mps/", "vulkan/", "metal/", "miopen/", "cudnn/",
                               "mkldnn/xpu/", "/cuda/", "/hip/"})
      if (starts_with(rest, device) || rest.find(std::string("/") + device) != std::string::npos)
        return "kernels of another device (CUDA, ROCm, MPS, Vulkan, Metal)";
    if (ext == ".cu" || ext == ".cuh" || ext == ".mm" || ext == ".metal")
      return "kernels of another device (CUDA, ROCm, MPS, Vulkan, Metal)";
  }
  return "";
}

bool is_native_source(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return starts_with(path, kNative) && (ext == ".cpp" || ext == ".cc" || ext == ".h");
}

std::string unquote(std::string p) {
  if (p.size() >= 2 && p.front() == '"' && p.back() == '"') p = p.substr(1, p.size() - 2);
  return p;
}

struct Native {
  const NativeFunctions& now;
  const NativeFunctions& before;
  std::set<std::string> ops_of_function(const std::string& fn) const {
    std::set<std::string> out = now.ops_of_function(fn);
    if (out.empty()) out = before.ops_of_function(fn);
    return out;
  }
};

// The changed lines of native_functions.yaml (its `side` of the diff) -> the entries' ops.
void yaml_changes(const std::string& text, const std::vector<std::pair<int, int>>& ranges,
                  const NativeFunctions& nf, const char* side, ChangeFacts& facts) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (const auto& [first, last] : ranges) {
    for (int line = first; line <= last; ++line) {
      std::string t = line <= static_cast<int>(lines.size())
                          ? trim_copy(lines[static_cast<size_t>(line - 1)])
                          : "";
      if (t.empty() || t[0] == '#') continue;
      if (auto op = nf.op_at(line))
        facts.ops[*op].push_back({fmt::format("upstream {}:{}{} changes the entry of {}",
                                              kNativeFunctions, line, side, *op),
                                  {},
                                  ""});
      else
        facts.full_plan.push_back(
            fmt::format("upstream {}:{}{} changes text outside any operator entry",
                        kNativeFunctions, line, side));
    }
  }
}

// A changed function of a native C++ file: where it first changed, and the dtypes its changed
// lines can affect (dtype_scope.h) over both sides of the diff.
struct ChangedFunction {
  int line = 0;
  const char* side = "";
  bool every_dtype = false;
  std::set<std::string> dtypes;
  std::vector<std::string> dtype_whys;
};

// The changed lines of a native C++ file -> the functions around them.
void native_source_changes(const std::string& path, const std::string& text,
                           const std::vector<std::pair<int, int>>& ranges, const char* side,
                           std::map<std::string, ChangedFunction>& changed, ChangeFacts& facts) {
  SourceText s(text, SourceLanguage::kCpp);
  std::vector<FunctionDefinition> defs = cpp_function_definitions(s);
  static const std::regex register_dispatch(
      R"(REGISTER_\w*DISPATCH\s*\(\s*(\w+)\s*,\s*&?([\w:]+))");
  for (const auto& [first, last] : ranges) {
    for (int line = first; line <= last; ++line) {
      if (!s.is_code_line(line)) continue;
      std::vector<const FunctionDefinition*> around;
      for (const auto& d : defs)
        if (d.first_line <= line && line <= d.last_line) around.push_back(&d);
      std::vector<std::string> functions;
      for (const auto* d : around) functions.push_back(d->name);
      std::string raw = s.masked_line(line);
      std::smatch m;
      if (functions.empty() && std::regex_search(raw, m, register_dispatch)) {
        std::string kernel = m[2].str();
        functions.push_back(
            kernel.substr(kernel.rfind(':') == std::string::npos ? 0 : kernel.rfind(':') + 1));
      }
      if (functions.empty()) {
        std::string trimmed = trim_copy(raw);
        // Includes, namespace braces and using-declarations do not change what a kernel does.
        if (trimmed.empty() || trimmed == "}" || starts_with(trimmed, "namespace") ||
            starts_with(trimmed, "} //") || starts_with(trimmed, "#include"))
          continue;
        facts.full_plan.push_back(
            fmt::format("upstream {}:{}{} changes code outside any function", path, line, side));
        continue;
      }
      // The outermost definition around the line is the kernel whose constructs decide.
      DtypeScope scope;
      if (!around.empty())
        scope = dtype_scope_at(s, around.front()->first_line, around.front()->last_line, line);
      for (const auto& fn : functions) {
        auto [it, fresh] = changed.try_emplace(fn);
        ChangedFunction& c = it->second;
        if (fresh) {
          c.line = line;
          c.side = side;
        }
        if (scope.every_dtype()) {
          c.every_dtype = true;
        } else {
          c.dtypes.insert(scope.dtypes.begin(), scope.dtypes.end());
          if (std::find(c.dtype_whys.begin(), c.dtype_whys.end(), scope.why) == c.dtype_whys.end())
            c.dtype_whys.push_back(scope.why);
        }
      }
    }
  }
}

void report_functions(const std::string& path,
                      const std::map<std::string, ChangedFunction>& changed, const Native& native,
                      ChangeFacts& facts) {
  for (const auto& [fn, c] : changed) {
    std::set<std::string> ops = native.ops_of_function(fn);
    if (ops.empty()) {
      facts.full_plan.push_back(
          fmt::format("upstream {}:{}{} changes {}, which no native_functions.yaml entry names "
                      "(a shared helper)",
                      path, c.line, c.side, fn));
      continue;
    }
    for (const auto& op : ops) {
      OpChange change{
          fmt::format("upstream {}:{}{} changes {}, a kernel of {}", path, c.line, c.side, fn, op),
          {},
          ""};
      if (!c.every_dtype) {
        change.dtypes = c.dtypes;
        change.dtype_why = fmt::format("{}", fmt::join(c.dtype_whys, "; "));
      }
      facts.ops[op].push_back(change);
    }
  }
}

}  // namespace

ChangeFacts upstream_changes(const std::string& repo, const std::string& range,
                             const std::set<std::string>& plan_relpaths) {
  auto [from, to] = parse_revision_range(range, "--upstream");
  std::string a = resolve_commit(repo, from, "--upstream");
  std::string b = resolve_commit(repo, to, "--upstream");
  std::string listing =
      git_output(repo, {"diff", "--no-renames", "--name-status", "--relative", a, b, "--", "."});

  ChangeFacts facts;
  nlohmann::json files = nlohmann::json::array();
  std::vector<std::string> native, core;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string status = line.substr(0, tab);
    std::string path = unquote(line.substr(tab + 1));
    std::string what = status == "A" ? "added" : status == "D" ? "removed" : "modified";
    nlohmann::json entry = {{"path", path}, {"status", what}};
    std::string name = fs::path(path).filename().string();
    if (plan_relpaths.count(path)) {
      facts.files[path].push_back(fmt::format("upstream test file {} {}", path, what));
      entry["effect"] = "file";
    } else if (starts_with(path, "test/")) {
      if (ends_with(name, ".py") && !starts_with(name, "test_")) {
        facts.full_plan.push_back(fmt::format(
            "upstream test helper {} {}: planned test files may import it", path, what));
        entry["effect"] = "full plan";
      } else {
        entry["effect"] = "ignored";
        entry["reason"] = "test file not in the plan";
      }
    } else if (std::string why = upstream_file_ignored_because(path); !why.empty()) {
      entry["effect"] = "ignored";
      entry["reason"] = why;
    } else if (path == kNativeFunctions || is_native_source(path)) {
      native.push_back(path);
      entry["effect"] = "ops";
    } else {
      core.push_back(path);
      entry["effect"] = "full plan";
    }
    files.push_back(entry);
  }
  if (!core.empty()) {
    std::string shown = fmt::format(
        "{}", fmt::join(core.begin(), core.begin() + std::min<size_t>(core.size(), 5), ", "));
    if (core.size() > 5) shown += fmt::format(" and {} more", core.size() - 5);
    facts.full_plan.push_back(
        fmt::format("upstream core changed outside operator kernels: {}", shown));
  }
  // Operator kernels narrow the selection only when nothing else already needs the full plan.
  if (!native.empty() && facts.full_plan.empty()) {
    NativeFunctions now(git_file_at(repo, b, kNativeFunctions).value_or(""));
    NativeFunctions before(git_file_at(repo, a, kNativeFunctions).value_or(""));
    Native lookup{now, before};
    for (const FileDiff& d : git_diff(repo, a, b, native)) {
      const std::string& path = d.path();
      std::string text_b = d.is_removed() ? "" : git_file_at(repo, b, path).value_or("");
      std::string text_a = d.is_added() ? "" : git_file_at(repo, a, path).value_or("");
      if (path == kNativeFunctions) {
        yaml_changes(text_b, d.added, now, "", facts);
        yaml_changes(text_a, d.removed, before, " (removed lines)", facts);
      } else {
        std::map<std::string, ChangedFunction> changed;  // functions, once per file
        native_source_changes(path, text_b, d.added, "", changed, facts);
        native_source_changes(path, text_a, d.removed, " (removed lines)", changed, facts);
        report_functions(path, changed, lookup, facts);
      }
    }
  }
  facts.summary = {{"range", range}, {"from", a}, {"to", b}, {"files", files}};
  return facts;
}

}  // namespace ootci
