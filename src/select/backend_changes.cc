// Backend commit range -> touched ops or the full plan (docs/select.md, "Backend changes").
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "base/text.h"
#include "evidence/code_evidence.h"
#include "evidence/source_text.h"
#include "select/changed.h"
#include "select/dtype_scope.h"
#include "select/git.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

// Files whose change cannot alter a test's result on the device. Anything not listed here and
// not a scanned source forces the full plan.
std::string backend_file_ignored_because(const std::string& path) {
  fs::path p(path);
  std::string first = p.begin() != p.end() ? p.begin()->string() : "";
  std::string name = lower(p.filename().string());
  std::string ext = lower(p.extension().string());
  if (first == ".github") return "CI workflow";
  if (first == "docs" || first == "doc" || ext == ".md" || ext == ".rst" ||
      name.rfind("license", 0) == 0 || name.rfind("copying", 0) == 0 ||
      name.rfind("changelog", 0) == 0 || name.rfind("authors", 0) == 0 || ext == ".png" ||
      ext == ".jpg" || ext == ".jpeg" || ext == ".svg" || ext == ".gif")
    return "documentation";
  if (name == ".gitignore" || name == ".gitattributes" || name == ".clang-format" ||
      name == ".clang-tidy" || name == ".pre-commit-config.yaml" || name == ".flake8" ||
      name == "codeowners")
    return "repository metadata";
  if (first == "tests" || first == "test") return "the backend's own tests, not the upstream plan";
  return "";
}

bool is_header(const std::string& path) {
  std::string ext = lower(fs::path(path).extension().string());
  return ext == ".h" || ext == ".hpp" || ext == ".hh" || ext == ".cuh";
}

bool is_python_file(const std::string& path) {
  return fs::path(path).extension() == ".py";
}

// The changed lines that hold code (comment-only and blank lines dropped), as ranges.
std::vector<std::pair<int, int>> code_ranges(const std::map<std::string, std::string>& files,
                                             const std::string& path,
                                             const std::vector<std::pair<int, int>>& ranges) {
  auto it = files.find(path);
  if (it == files.end()) return ranges;
  SourceText s(it->second, is_python_file(path) ? SourceLanguage::kPython : SourceLanguage::kCpp);
  std::vector<std::pair<int, int>> out;
  for (const auto& [first, last] : ranges) {
    for (int line = first; line <= last; ++line) {
      if (!s.is_code_line(line)) continue;
      if (!out.empty() && out.back().second == line - 1)
        out.back().second = line;
      else
        out.emplace_back(line, line);
    }
  }
  return out;
}

const OpRegistration* registration_of(const CodeEvidence& e, const std::string& op,
                                      const std::string& file) {
  const OpRegistration* any = nullptr;
  for (const auto& r : e.registrations) {
    if (r.op != op) continue;
    if (r.file == file || r.function_file == file) return &r;
    if (!any) any = &r;
  }
  return any;
}

std::string kernel_of(const OpRegistration* r) {
  return r && !r->function.empty() ? fmt::format(" (kernel {})", r->function) : "";
}

std::string fallback_kernel(const CodeEvidence& e) {
  for (const auto& r : e.registrations)
    if (r.kind == "fallback" && !r.function.empty()) return fmt::format(" ({})", r.function);
  return "";
}

struct SideChange {
  const CodeEvidence& evidence;
  const std::map<std::string, std::string>& sources;
  const CodeEvidence& other_side;
  const std::vector<std::pair<int, int>>& ranges;
  const char* side;  // "" for the new side, " (removed lines)" for the old one
};

bool registers(const CodeEvidence& e, const std::string& op) {
  return std::any_of(e.registrations.begin(), e.registrations.end(),
                     [&](const OpRegistration& r) { return r.kind != "fallback" && r.op == op; });
}

// The dtypes a change to `lines` of `path` can affect for `op` (dtype_scope.h): a kernel
// registered (or unregistered) for some dtypes only, with every other handed to the fallback,
// limits all of it; otherwise each changed line inside the kernel says, and any other line
// (its registration, code outside the kernels) may affect every dtype.
DtypeScope op_change_scope(const SideChange& side, const std::string& path,
                           std::pair<int, int> lines, const std::string& op, bool whole_file) {
  const OpRegistration* reg = registration_of(side.evidence, op, path);
  if (!reg || reg->function_begin == 0) return {};
  auto source = side.sources.find(reg->function_file);
  if (source == side.sources.end()) return {};
  SourceText text(source->second, SourceLanguage::kCpp);
  if (!registers(side.other_side, op)) {
    std::set<std::string> fallbacks;
    for (const auto& r : side.evidence.registrations)
      if (r.kind == "fallback" && !r.function.empty()) fallbacks.insert(r.function);
    DtypeScope own = kernel_own_dtypes(text, reg->function_begin, reg->function_end, fallbacks);
    if (!own.every_dtype()) return own;
  }
  if (whole_file || reg->function_file != path) return {};
  DtypeScope out;
  for (int line = lines.first; line <= lines.second; ++line) {
    if (line < reg->function_begin || line > reg->function_end) return {};
    DtypeScope at = dtype_scope_at(text, reg->function_begin, reg->function_end, line);
    if (at.every_dtype()) return {};
    out.dtypes.insert(at.dtypes.begin(), at.dtypes.end());
    if (out.why.find(at.why) == std::string::npos)
      out.why += (out.why.empty() ? "" : "; ") + at.why;
  }
  return out;
}

}  // namespace

ChangeFacts backend_changes(const std::string& repo, const std::string& range,
                            const std::string& dispatch_key) {
  auto [from, to] = parse_revision_range(range, "--backend");
  std::string a = resolve_commit(repo, from, "--backend");
  std::string b = resolve_commit(repo, to, "--backend");
  std::vector<FileDiff> diffs = git_diff(repo, a, b);

  ChangeFacts facts;
  nlohmann::json files = nlohmann::json::array();
  bool any_source = std::any_of(diffs.begin(), diffs.end(),
                                [](const FileDiff& d) { return is_scanned_source(d.path()); });
  std::map<std::string, std::string> sources_a, sources_b;
  CodeEvidence evidence_a, evidence_b;
  if (any_source) {
    sources_a = git_files_at(repo, a, is_scanned_source);
    sources_b = git_files_at(repo, b, is_scanned_source);
    evidence_a = scan_sources(sources_a, dispatch_key);
    evidence_b = scan_sources(sources_b, dispatch_key);
  }

  for (const FileDiff& d : diffs) {
    const std::string& path = d.path();
    nlohmann::json entry = {{"path", path}, {"status", d.status()}};
    auto full_plan = [&](const std::string& why) {
      facts.full_plan.push_back(why);
      entry["effect"] = "full plan";
      entry["reason"] = why;
    };
    if (std::string why = backend_file_ignored_because(path); !why.empty()) {
      entry["effect"] = "ignored";
      entry["reason"] = why;
    } else if (d.binary || !is_scanned_source(path)) {
      full_plan(
          fmt::format("backend {} {}: a build, packaging or other file the scanner does not "
                      "read, so every test may depend on it",
                      path, d.status()));
    } else {
      auto new_lines = code_ranges(sources_b, path, d.added);
      auto old_lines = code_ranges(sources_a, path, d.removed);
      bool known = evidence_b.ops_by_file.count(path) || evidence_a.ops_by_file.count(path);
      for (const auto* e : {&evidence_a, &evidence_b})
        known = known || std::find(e->fallback_files.begin(), e->fallback_files.end(), path) !=
                             e->fallback_files.end();
      std::set<std::string> ops;
      if (new_lines.empty() && old_lines.empty()) {
        entry["effect"] = "ignored";
        entry["reason"] = "comments or blank lines only";
      } else if (!known) {
        std::string what = is_header(path)        ? "a header that defines no kernel (included "
                                                    "across the backend)"
                           : is_python_file(path) ? "Python code that registers no op (imported "
                                                    "with the backend)"
                                                  : "compiled into the backend but registers no "
                                                    "op (allocator, guard, helpers)";
        full_plan(fmt::format("backend {} {}: {}", path, d.status(), what));
      } else {
        std::vector<std::string> op_reasons;
        bool fallback = false, header_outside_kernels = false;
        int fallback_line = 0;
        for (const SideChange& side :
             {SideChange{evidence_b, sources_b, evidence_a, new_lines, ""},
              SideChange{evidence_a, sources_a, evidence_b, old_lines, " (removed lines)"}}) {
          for (const auto& r : side.ranges) {
            TouchedOps t = ops_touched(side.evidence, path, {r});
            if (t.touches_fallback && !fallback) {
              fallback = true;
              fallback_line = r.first;
            }
            if (t.whole_file && is_header(path)) header_outside_kernels = true;
            for (const auto& op : t.ops) {
              DtypeScope scope = op_change_scope(side, path, r, op, t.whole_file);
              bool first_change = ops.insert(op).second;
              // A later range of the same op adds its dtypes (or every dtype) to the first one's.
              if (!first_change) {
                OpChange& c = facts.ops[op].back();
                if (c.dtypes.empty()) continue;
                if (scope.every_dtype()) {
                  c.dtypes.clear();
                  c.dtype_why.clear();
                } else {
                  c.dtypes.insert(scope.dtypes.begin(), scope.dtypes.end());
                  if (c.dtype_why.find(scope.why) == std::string::npos)
                    c.dtype_why += "; " + scope.why;
                }
                continue;
              }
              const OpRegistration* reg = registration_of(side.evidence, op, path);
              std::string why =
                  d.is_added()     ? fmt::format("backend {} (new file) registers {}{}", path, op,
                                                 kernel_of(reg))
                  : d.is_removed() ? fmt::format("backend {} (removed) registered {}{}", path, op,
                                                 kernel_of(reg))
                  : t.whole_file
                      ? fmt::format(
                            "backend {}:{}{} changes code outside the known kernels of a "
                            "file that registers {}",
                            path, r.first, side.side, op)
                      : fmt::format("backend {}:{}{} changes {}{}", path, r.first, side.side, op,
                                    kernel_of(reg));
              facts.ops[op].push_back({why, scope.dtypes, scope.why});
            }
          }
        }
        if (fallback) {
          full_plan(
              fmt::format("backend {}:{} changes the boxed fallback{}, which serves every op "
                          "without its own kernel",
                          path, fallback_line, fallback_kernel(evidence_b)));
        } else if (header_outside_kernels) {
          full_plan(
              fmt::format("backend {} {}: a header changed outside its kernels (included "
                          "across the backend)",
                          path, d.status()));
        } else {
          entry["effect"] = "ops";
        }
        entry["ops"] = ops;
      }
    }
    files.push_back(entry);
  }
  facts.summary = {{"range", range}, {"from", a}, {"to", b}, {"files", files}};
  return facts;
}

}  // namespace ootci
