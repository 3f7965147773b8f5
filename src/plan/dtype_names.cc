#include "plan/dtype_names.h"

#include <array>
#include <string_view>

namespace ootci {
namespace {

// The order of docs/plan.md, so the error message reads like the documentation.
constexpr std::array<std::string_view, 17> kDtypeNames = {
    "float16", "float32",   "float64",   "bfloat16",   "half",   "int8",
    "int16",   "int32",     "int64",     "uint8",      "uint16", "uint32",
    "uint64",  "complex32", "complex64", "complex128", "bool"};

}  // namespace

std::optional<std::string> canonical_dtype(const std::string& name) {
  if (name == "half") return "float16";
  for (std::string_view d : kDtypeNames)
    if (d == name) return name;
  return std::nullopt;
}

std::string accepted_dtype_names() {
  std::string out;
  for (std::string_view d : kDtypeNames) {
    if (!out.empty()) out += ", ";
    out += d;
  }
  return out;
}

}  // namespace ootci
