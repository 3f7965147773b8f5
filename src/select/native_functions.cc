#include "select/native_functions.h"

#include <regex>
#include <sstream>

namespace ootci {
namespace {

int yaml_indentation(const std::string& line) {
  size_t n = line.find_first_not_of(' ');
  return n == std::string::npos ? -1 : static_cast<int>(n);
}

std::string base_name(const std::string& op) {
  std::string n = op.substr(op.find("::") == std::string::npos ? 0 : op.find("::") + 2);
  size_t dot = n.find('.');
  return dot == std::string::npos ? n : n.substr(0, dot);
}

}  // namespace

std::string op_family(const std::string& op) {
  size_t colon = op.find("::");
  std::string ns = colon == std::string::npos ? "aten" : op.substr(0, colon);
  std::string name = base_name(op);
  bool dunder =
      name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0;
  if (!dunder && name.size() > 1 && name.back() == '_') name.pop_back();
  return ns + "::" + name;
}

NativeFunctions::NativeFunctions(const std::string& yaml_text) {
  static const std::regex func(R"(^- func:\s*([A-Za-z_][\w.]*)\s*\()");
  static const std::regex dispatch_entry(R"(^\s+[\w, ]+:\s*([A-Za-z_]\w*)\s*(#.*)?$)");
  std::istringstream in(yaml_text);
  std::string line;
  int number = 0;
  int dispatch_indent = -1;  // inside a `dispatch:` block when >= 0
  while (std::getline(in, line)) {
    ++number;
    std::smatch m;
    if (std::regex_search(line, m, func)) {
      if (!entries_.empty()) entries_.back().last_line = number - 1;
      std::string op = "aten::" + m[1].str();
      entries_.push_back({op, number, number});
      by_base_name_[op_family(op).substr(6)].insert(op);
      by_base_name_[base_name(op)].insert(op);
      dispatch_indent = -1;
      continue;
    }
    if (entries_.empty()) continue;
    int indent = yaml_indentation(line);
    if (indent < 0) continue;
    std::string trimmed = line.substr(static_cast<size_t>(indent));
    if (trimmed.rfind("dispatch:", 0) == 0) {
      dispatch_indent = indent;
      continue;
    }
    if (dispatch_indent >= 0 && indent > dispatch_indent) {
      if (std::regex_search(line, m, dispatch_entry)) by_kernel_[m[1]].insert(entries_.back().op);
    } else if (trimmed[0] != '#') {
      dispatch_indent = -1;
    }
  }
  if (!entries_.empty()) entries_.back().last_line = number;
}

std::optional<std::string> NativeFunctions::op_at(int line) const {
  for (const auto& e : entries_)
    if (e.first_line <= line && line <= e.last_line) return e.op;
  return std::nullopt;
}

std::set<std::string> NativeFunctions::ops_of_function(const std::string& function) const {
  if (auto it = by_kernel_.find(function); it != by_kernel_.end()) return it->second;
  // add_kernel, add_out_impl, cpu_add_kernel, sum_kernel_impl -> add, sum.
  static const std::vector<std::string> suffixes = {"_out",  "_kernel",   "_impl", "_cpu",
                                                    "_stub", "_template", "_fn",   "_"};
  std::string name = function;
  if (name.rfind("cpu_", 0) == 0) name = name.substr(4);
  for (bool changed = true; changed && !name.empty();) {
    if (auto it = by_base_name_.find(name); it != by_base_name_.end()) return it->second;
    changed = false;
    for (const auto& s : suffixes) {
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        name.resize(name.size() - s.size());
        changed = true;
        break;
      }
    }
  }
  return {};
}

}  // namespace ootci
