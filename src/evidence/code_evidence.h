#pragma once
// Code evidence: what a backend's sources register for its dispatch key, and where
// (docs/select.md). C++ `TORCH_LIBRARY_IMPL(aten, <Key>, m)` blocks with `m.impl("op", fn)`,
// `TORCH_LIBRARY_IMPL(_, <Key>, m)` with `m.fallback(...)`, and Python `torch.library`
// registrations (`Library("aten", "IMPL")` then `.impl("op", fn, "<Key>")`, and a boxed fallback:
// `Library("_", "IMPL")` then `.fallback(fn, dispatch_key="<Key>")`).
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ootci {

struct OpRegistration {
  std::string op;    // as registered, normalized to "aten::name[.overload]" ("aten::add.Tensor")
  std::string file;  // relative to the scanned root
  int line = 0;      // of the registration
  int end_line = 0;  // last line of the registration statement (a call may span lines)
  std::string kind;  // impl | fallback | python
  // The kernel the registration names ("<lambda>" for a lambda, "" for none), where it is
  // defined and the lines of its definition (0 when not found): a change inside them touches
  // this op. Usually `file`; otherwise the first other scanned file that defines a function of
  // that name (real backends register in one file and define kernels in others).
  std::string function;
  std::string function_file;
  int function_begin = 0, function_end = 0;
};

struct CodeEvidence {
  std::vector<OpRegistration> registrations;  // sorted by file, line
  std::set<std::string> supported_ops;        // every op with an impl (not the fallback)
  bool has_fallback = false;                  // a boxed fallback serves every other op
  std::vector<std::string> fallback_files;    // where the fallback is registered or defined
  std::map<std::string, std::set<std::string>>
      ops_by_file;  // file -> ops registered or defined there
};

// Scans *.cpp, *.cc, *.cxx, *.cu, *.h, *.hpp and *.py under `root` (skipping build folders and
// hidden ones) for registrations on `dispatch_key` (e.g. "PrivateUse1") and its autograd key
// ("AutogradPrivateUse1"). Hand-written scanner, not libclang: registrations must be read at any
// git revision without a build, and TORCH_LIBRARY_IMPL is a macro libclang only sees through
// with torch's headers and the backend's compile flags.
CodeEvidence scan_backend_sources(const std::string& root, const std::string& dispatch_key);
// The same over files already in memory (relative path -> content), e.g. read at a git revision.
CodeEvidence scan_sources(const std::map<std::string, std::string>& files,
                          const std::string& dispatch_key);
// Whether scan_sources reads this file as C++ or Python source.
bool is_scanned_source(const std::string& path);

// The ops whose kernels a change to `file` (relative to the scanned root) at these 1-based line
// ranges touches. A change to a registration line touches its op; a change outside every known
// kernel of a file that registers ops returns every op of that file; `touches_fallback` is set
// when the change is in the fallback's kernel or registration.
struct TouchedOps {
  std::set<std::string> ops;
  bool touches_fallback = false;
  bool whole_file = false;  // could not narrow the change to kernels
};
TouchedOps ops_touched(const CodeEvidence& evidence, const std::string& file,
                       const std::vector<std::pair<int, int>>& changed_lines);

// "add.Tensor", "aten::add.Tensor", "add" -> "aten::add.Tensor" / "aten::add".
std::string normalize_op_name(const std::string& name);

}  // namespace ootci
