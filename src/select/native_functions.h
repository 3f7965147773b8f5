#pragma once
// Upstream ATen's operator list, aten/src/ATen/native/native_functions.yaml, read as text: which
// entry a line belongs to, and which ops a native C++ function implements (from `dispatch:`,
// then by name).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ootci {

class NativeFunctions {
 public:
  explicit NativeFunctions(const std::string& yaml_text);

  // The op of the entry holding 1-based `line` ("aten::add.Tensor"); nullopt outside entries
  // (the file's header comments).
  std::optional<std::string> op_at(int line) const;
  // Ops whose `dispatch:` names `function` (e.g. add_out -> aten::add.out); else ops whose base
  // name is the function's name without kernel suffixes (add_kernel, add_out_impl -> add).
  std::set<std::string> ops_of_function(const std::string& function) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string op;
    int first_line = 0, last_line = 0;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::set<std::string>> by_kernel_;     // dispatch function -> ops
  std::map<std::string, std::set<std::string>> by_base_name_;  // "add" -> ops
};

// "aten::add_.Tensor" -> "aten::add": ops whose kernels share code (overloads, in-place and out
// variants). Dunder names keep their underscores ("aten::__and__").
std::string op_family(const std::string& op);

}  // namespace ootci
