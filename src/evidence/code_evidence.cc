#include "evidence/code_evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "evidence/source_text.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

const std::set<std::string> kCppExtensions = {".cpp", ".cc", ".cxx", ".cu", ".h", ".hpp", ".hh"};

bool skipped_folder(const std::string& name) {
  return name.empty() || name[0] == '.' || name == "build" || name == "dist" ||
         name == "__pycache__" ||
         (name.size() > 9 && name.compare(name.size() - 9, 9, ".egg-info") == 0);
}

bool is_python(const std::string& path) {
  return fs::path(path).extension() == ".py";
}

std::string slice(const SourceText& s, std::pair<size_t, size_t> range) {
  return s.masked().substr(range.first, range.second - range.first);
}

// "PrivateUse1" and "AutogradPrivateUse1": an autograd kernel for the device changes the same
// tests as its forward kernel.
bool wanted_key(const std::string& key, const std::string& dispatch_key) {
  return key == dispatch_key || key == "Autograd" + dispatch_key;
}

// The kernel a registration's kernel expression names: the first qualified name that is not a
// wrapper (TORCH_FN(ns::f), &f, makeFromBoxedFunction<&ns::f>()). "" for makeFallthrough().
std::string kernel_name(const std::string& expression) {
  static const std::set<std::string> wrappers = {"TORCH_FN",
                                                 "TORCH_FN_TYPE",
                                                 "torch",
                                                 "c10",
                                                 "CppFunction",
                                                 "makeFromBoxedFunction",
                                                 "decltype",
                                                 "makeFromUnboxedFunction",
                                                 "makeFromUnboxedRuntimeFunction",
                                                 "makeFallthrough",
                                                 "makeNamedNotSupported",
                                                 "make_boxed_from_unboxed_functor"};
  static const std::regex qualified(R"((::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*)");
  for (auto it = std::sregex_iterator(expression.begin(), expression.end(), qualified);
       it != std::sregex_iterator(); ++it) {
    std::string name = it->str();
    if (name.rfind("::", 0) == 0) name = name.substr(2);
    std::string last =
        name.substr(name.rfind("::") == std::string::npos ? 0 : name.rfind("::") + 2);
    if (wrappers.count(last) || last == "makeFallthrough") {
      if (last == "makeFallthrough" || last == "makeNamedNotSupported") return "";
      continue;
    }
    return name;
  }
  return "";
}

// After `at`: `. word (` with spaces allowed; returns the offset of `(` or npos.
size_t method_call(const std::string& m, size_t at, const std::string& method) {
  size_t i = at;
  auto skip = [&] {
    while (i < m.size() && (m[i] == ' ' || m[i] == '\t' || m[i] == '\n' || m[i] == '\r')) ++i;
  };
  skip();
  if (i >= m.size() || m[i] != '.') return std::string::npos;
  ++i;
  skip();
  if (m.compare(i, method.size(), method) != 0) return std::string::npos;
  i += method.size();
  if (i < m.size() && is_identifier_char(m[i])) return std::string::npos;
  skip();
  return i < m.size() && m[i] == '(' ? i : std::string::npos;
}

std::string unqualified(const std::string& name) {
  size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::optional<std::pair<int, int>> find_definition(const std::vector<FunctionDefinition>& defs,
                                                   const std::string& name) {
  std::string wanted = unqualified(name);
  for (const auto& d : defs)
    if (d.name == wanted) return std::make_pair(d.first_line, d.last_line);
  return std::nullopt;
}

struct Scanner {
  const std::string& dispatch_key;
  std::vector<OpRegistration> out;
  std::map<std::string, std::vector<FunctionDefinition>> cpp_definitions;  // by file

  const std::vector<FunctionDefinition>& definitions(const std::string& file, const SourceText& s) {
    auto it = cpp_definitions.find(file);
    if (it == cpp_definitions.end())
      it = cpp_definitions.emplace(file, cpp_function_definitions(s)).first;
    return it->second;
  }

  void add(OpRegistration r, const SourceText& s, std::pair<size_t, size_t> kernel_arg,
           bool python) {
    std::string expr = trim_copy(slice(s, kernel_arg));
    bool lambda = python ? expr.rfind("lambda", 0) == 0 : (!expr.empty() && expr[0] == '[');
    if (lambda) {
      r.function = "<lambda>";
      r.function_file = r.file;
      r.function_begin = s.line_of(kernel_arg.first);
      r.function_end = s.line_of(kernel_arg.second - 1);
    } else {
      r.function = python ? expr : kernel_name(expr);
      if (python) {
        // mod.fn -> fn; anything else (a call, a subscript) names no definition here.
        size_t dot = r.function.rfind('.');
        if (dot != std::string::npos) r.function = r.function.substr(dot + 1);
        if (!std::all_of(r.function.begin(), r.function.end(), is_identifier_char))
          r.function.clear();
      }
      auto lines = r.function.empty() ? std::nullopt
                   : python           ? python_function_lines(s, r.function)
                                      : find_definition(definitions(r.file, s), r.function);
      if (lines) {
        r.function_file = r.file;
        std::tie(r.function_begin, r.function_end) = *lines;
      }
    }
    out.push_back(std::move(r));
  }

  void scan_cpp(const std::string& file, const SourceText& s) {
    const std::string& m = s.masked();
    for (size_t at : s.find_word("TORCH_LIBRARY_IMPL")) {
      size_t open = m.find_first_not_of(" \t\r\n", at + 18);
      if (open == std::string::npos || m[open] != '(') continue;
      size_t close = s.matching(open);
      if (close == std::string::npos) continue;
      auto args = s.split_arguments(open + 1, close);
      if (args.size() != 3) continue;
      std::string ns = slice(s, args[0]), key = slice(s, args[1]), var = slice(s, args[2]);
      size_t body = m.find_first_not_of(" \t\r\n", close + 1);
      if (body == std::string::npos || m[body] != '{') continue;
      size_t body_end = s.matching(body);
      if (body_end == std::string::npos || !wanted_key(key, dispatch_key)) continue;
      bool fallback = ns == "_";
      for (size_t use : s.find_word(var)) {
        if (use <= body || use >= body_end) continue;
        size_t call = method_call(m, use + var.size(), fallback ? "fallback" : "impl");
        if (call == std::string::npos) continue;
        size_t call_end = s.matching(call);
        if (call_end == std::string::npos) continue;
        auto call_args = s.split_arguments(call + 1, call_end);
        OpRegistration r;
        r.file = file;
        r.line = s.line_of(use);
        r.end_line = s.line_of(call_end);
        if (fallback) {
          if (call_args.empty()) continue;
          r.kind = "fallback";
          add(std::move(r), s, call_args.back(), false);
          continue;
        }
        if (call_args.size() < 2) continue;
        auto name = s.string_at(call_args[0].first, call_args[0].second);
        if (!name) continue;
        // m.impl("op", c10::DispatchKey::X, kernel) names its own key.
        if (call_args.size() == 3) {
          std::string explicit_key = slice(s, call_args[1]);
          size_t colon = explicit_key.rfind("::");
          if (colon != std::string::npos) explicit_key = explicit_key.substr(colon + 2);
          if (!wanted_key(trim_copy(explicit_key), dispatch_key)) continue;
        }
        r.kind = "impl";
        std::string op = name->first;
        r.op = normalize_op_name(op.find("::") == std::string::npos ? ns + "::" + op : op);
        add(std::move(r), s, call_args.back(), false);
      }
    }
  }

  // Keyword argument `name=...` among call arguments, else the positional one at `index`.
  static std::optional<std::pair<size_t, size_t>> argument(
      const SourceText& s, const std::vector<std::pair<size_t, size_t>>& args, size_t index,
      const std::string& name) {
    static const std::regex keyword(R"(^\s*(\w+)\s*=[^=])");
    for (const auto& a : args) {
      std::smatch k;
      std::string text = slice(s, a);
      if (std::regex_search(text, k, keyword) && k[1] == name) {
        size_t eq = s.masked().find('=', a.first);
        return std::make_pair(eq + 1, a.second);
      }
    }
    size_t positional = 0;
    for (const auto& a : args) {
      std::smatch k;
      std::string text = slice(s, a);
      if (std::regex_search(text, k, keyword)) continue;
      if (positional++ == index) return a;
    }
    return std::nullopt;
  }

  std::optional<std::string> string_argument(const SourceText& s,
                                             const std::vector<std::pair<size_t, size_t>>& args,
                                             size_t index, const std::string& name) {
    auto a = argument(s, args, index, name);
    if (!a) return std::nullopt;
    auto str = s.string_at(a->first, a->second);
    if (!str) return std::nullopt;
    return str->first;
  }

  void scan_python(const std::string& file, const SourceText& s) {
    const std::string& m = s.masked();
    struct Library {
      std::string ns, key;
    };
    std::map<std::string, Library> libraries;  // variable -> library
    static const std::regex assigned(R"(([A-Za-z_][\w.]*)\s*=\s*$)");
    for (size_t at : s.find_word("Library")) {
      size_t open = m.find_first_not_of(" \t", at + 7);
      if (open == std::string::npos || m[open] != '(') continue;
      size_t close = s.matching(open);
      if (close == std::string::npos) continue;
      auto args = s.split_arguments(open + 1, close);
      auto ns = string_argument(s, args, 0, "ns");
      auto kind = string_argument(s, args, 1, "kind");
      if (!ns || !kind || *kind != "IMPL") continue;
      std::string key = string_argument(s, args, 2, "dispatch_key").value_or("");
      // The variable it is assigned to: `lib = torch.library.Library(...)` on that line.
      size_t line_begin = m.rfind('\n', at);
      line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
      std::string before = m.substr(line_begin, at - line_begin);
      for (const char* prefix : {"torch.library.", "library."})
        if (before.size() >= strlen(prefix) &&
            before.compare(before.size() - strlen(prefix), strlen(prefix), prefix) == 0)
          before.resize(before.size() - strlen(prefix));
      std::smatch var;
      if (std::regex_search(before, var, assigned)) libraries[var[1]] = {*ns, key};
    }
    for (const auto& [var, lib] : libraries) {
      for (size_t use = m.find(var); use != std::string::npos; use = m.find(var, use + 1)) {
        if (use > 0 && (is_identifier_char(m[use - 1]) || m[use - 1] == '.')) continue;
        // lib.fallback(fn, dispatch_key="PrivateUse1"): a boxed fallback for every op the key has
        // no kernel for (PyTorch's OpenReg computes all its ops so).
        size_t fallback = method_call(m, use + var.size(), "fallback");
        if (fallback != std::string::npos) {
          size_t fallback_end = s.matching(fallback);
          if (fallback_end == std::string::npos) continue;
          auto args = s.split_arguments(fallback + 1, fallback_end);
          auto fn = argument(s, args, 0, "fn");
          std::string key = string_argument(s, args, 1, "dispatch_key").value_or(lib.key);
          if (!fn || !wanted_key(key, dispatch_key)) continue;
          OpRegistration r;
          r.file = file;
          r.line = s.line_of(use);
          r.end_line = s.line_of(fallback_end);
          r.kind = "fallback";
          add(std::move(r), s, *fn, true);
          continue;
        }
        size_t call = method_call(m, use + var.size(), "impl");
        if (call == std::string::npos) continue;
        size_t call_end = s.matching(call);
        if (call_end == std::string::npos) continue;
        auto args = s.split_arguments(call + 1, call_end);
        auto op = string_argument(s, args, 0, "op_name");
        auto fn = argument(s, args, 1, "fn");
        if (!op || !fn) continue;
        std::string key = string_argument(s, args, 2, "dispatch_key").value_or(lib.key);
        if (!wanted_key(key, dispatch_key)) continue;
        OpRegistration r;
        r.file = file;
        r.line = s.line_of(use);
        r.end_line = s.line_of(call_end);
        r.kind = "python";
        r.op = normalize_op_name(op->find("::") == std::string::npos ? lib.ns + "::" + *op : *op);
        add(std::move(r), s, *fn, true);
      }
    }
    // @torch.library.impl(lib, "op", "PrivateUse1") above a def.
    static const std::regex decorator(R"(^[ \t]*@[ \t]*((torch\.)?library\.)?impl[ \t]*\()");
    for (int line = 1; line <= s.line_count(); ++line) {
      std::string text = s.masked_line(line);
      std::smatch d;
      if (!std::regex_search(text, d, decorator)) continue;
      size_t line_begin = 0;
      for (int l = 1; l < line; ++l) line_begin = m.find('\n', line_begin) + 1;
      size_t open = line_begin + static_cast<size_t>(d.length(0)) - 1;
      size_t close = s.matching(open);
      if (close == std::string::npos) continue;
      auto args = s.split_arguments(open + 1, close);
      if (args.empty()) continue;
      auto lib = libraries.find(trim_copy(slice(s, args[0])));
      auto op = string_argument(s, args, 1, "name");
      if (!op) continue;
      std::string ns = lib != libraries.end() ? lib->second.ns : "aten";
      std::string key = string_argument(s, args, 2, "dispatch_key")
                            .value_or(lib != libraries.end() ? lib->second.key : "");
      if (!wanted_key(key, dispatch_key)) continue;
      OpRegistration r;
      r.file = file;
      r.line = line;
      r.end_line = s.line_of(close);
      r.kind = "python";
      r.op = normalize_op_name(op->find("::") == std::string::npos ? ns + "::" + *op : *op);
      // The decorated function: the next `def name`.
      static const std::regex def(R"(^[ \t]*(async[ \t]+)?def[ \t]+(\w+))");
      for (int next = s.line_of(close) + 1; next <= s.line_count(); ++next) {
        std::smatch f;
        std::string next_text = s.masked_line(next);
        if (!std::regex_search(next_text, f, def)) continue;
        r.function = f[2];
        if (auto lines = python_function_lines(s, r.function)) {
          r.function_file = file;
          std::tie(r.function_begin, r.function_end) = *lines;
        }
        break;
      }
      out.push_back(std::move(r));
    }
  }
};

// A kernel registered in one file and defined in another: the first file (in path order) that
// defines it.
void find_kernels_elsewhere(Scanner& scanner, const std::map<std::string, SourceText>& parsed) {
  for (auto& r : scanner.out) {
    if (!r.function_file.empty() || r.function.empty() || r.function == "<lambda>") continue;
    for (const auto& [path, s] : parsed) {
      if (path == r.file || is_python(path) != is_python(r.file)) continue;
      if (s.find_word(unqualified(r.function)).empty()) continue;
      auto lines = is_python(path) ? python_function_lines(s, r.function)
                                   : find_definition(scanner.definitions(path, s), r.function);
      if (!lines) continue;
      r.function_file = path;
      std::tie(r.function_begin, r.function_end) = *lines;
      break;
    }
  }
}

}  // namespace

bool is_scanned_source(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return kCppExtensions.count(ext) || ext == ".py";
}

std::string normalize_op_name(const std::string& name) {
  std::string n = trim_copy(name);
  std::string ns = "aten";
  size_t colon = n.find("::");
  if (colon != std::string::npos) {
    ns = n.substr(0, colon);
    n = n.substr(colon + 2);
  } else if (n.rfind("aten.", 0) == 0) {
    n = n.substr(5);  // OpOverload's str(): aten.add.Tensor
  }
  if (n.size() > 8 && n.compare(n.size() - 8, 8, ".default") == 0) n.resize(n.size() - 8);
  return ns + "::" + n;
}

CodeEvidence scan_sources(const std::map<std::string, std::string>& files,
                          const std::string& dispatch_key) {
  Scanner scanner{dispatch_key, {}, {}};
  std::map<std::string, SourceText> parsed;
  for (const auto& [path, text] : files) {
    if (!is_scanned_source(path)) continue;
    bool python = is_python(path);
    auto& s = parsed
                  .emplace(path, SourceText(
                                     text, python ? SourceLanguage::kPython : SourceLanguage::kCpp))
                  .first->second;
    if (python)
      scanner.scan_python(path, s);
    else
      scanner.scan_cpp(path, s);
  }
  find_kernels_elsewhere(scanner, parsed);

  CodeEvidence e;
  e.registrations = std::move(scanner.out);
  std::sort(e.registrations.begin(), e.registrations.end(),
            [](const OpRegistration& a, const OpRegistration& b) {
              return std::tie(a.file, a.line) < std::tie(b.file, b.line);
            });
  std::set<std::string> fallback_files;
  for (const auto& r : e.registrations) {
    if (r.kind == "fallback") {
      e.has_fallback = true;
      fallback_files.insert(r.file);
      if (!r.function_file.empty()) fallback_files.insert(r.function_file);
      continue;
    }
    e.supported_ops.insert(r.op);
    e.ops_by_file[r.file].insert(r.op);
    if (!r.function_file.empty()) e.ops_by_file[r.function_file].insert(r.op);
  }
  e.fallback_files.assign(fallback_files.begin(), fallback_files.end());
  return e;
}

CodeEvidence scan_backend_sources(const std::string& root, const std::string& dispatch_key) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw Error(fmt::format("{}: not a folder of backend sources", root));
  std::map<std::string, std::string> files;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory(ec)) {
      if (skipped_folder(p.filename().string())) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || !is_scanned_source(p.string())) continue;
    files[fs::relative(p, root).generic_string()] = read_file_or_empty(p.string());
  }
  if (ec) throw Error(fmt::format("{}: cannot list the backend sources: {}", root, ec.message()));
  return scan_sources(files, dispatch_key);
}

TouchedOps ops_touched(const CodeEvidence& evidence, const std::string& file,
                       const std::vector<std::pair<int, int>>& changed_lines) {
  TouchedOps t;
  bool fallback_file = std::find(evidence.fallback_files.begin(), evidence.fallback_files.end(),
                                 file) != evidence.fallback_files.end();
  auto known = evidence.ops_by_file.find(file);
  bool registers_or_defines = fallback_file || known != evidence.ops_by_file.end();
  auto touch = [&](const OpRegistration& r) {
    if (r.kind == "fallback")
      t.touches_fallback = true;
    else
      t.ops.insert(r.op);
  };
  for (const auto& [first, last] : changed_lines) {
    for (int line = first; line <= last; ++line) {
      bool covered = false;
      for (const auto& r : evidence.registrations) {
        if (r.file == file && r.line <= line && line <= std::max(r.line, r.end_line)) {
          touch(r);
          covered = true;
        }
        if (r.function_file == file && r.function_begin <= line && line <= r.function_end) {
          touch(r);
          covered = true;
        }
      }
      if (!covered && registers_or_defines) t.whole_file = true;
    }
  }
  if (t.whole_file) {
    if (known != evidence.ops_by_file.end())
      t.ops.insert(known->second.begin(), known->second.end());
    if (fallback_file) t.touches_fallback = true;
  }
  return t;
}

}  // namespace ootci
