#include "plan/dtype_names.h"

#include <array>
#include <map>
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

std::string dtype_of_scalar_type(const std::string& t) {
  static const std::map<std::string, std::string> kNames = {{"Bool", "bool"},
                                                            {"Byte", "uint8"},
                                                            {"Char", "int8"},
                                                            {"Short", "int16"},
                                                            {"Int", "int32"},
                                                            {"Long", "int64"},
                                                            {"Half", "float16"},
                                                            {"Float", "float32"},
                                                            {"Double", "float64"},
                                                            {"BFloat16", "bfloat16"},
                                                            {"ComplexHalf", "complex32"},
                                                            {"ComplexFloat", "complex64"},
                                                            {"ComplexDouble", "complex128"},
                                                            {"UInt16", "uint16"},
                                                            {"UInt32", "uint32"},
                                                            {"UInt64", "uint64"}};
  auto it = kNames.find(t);
  return it == kNames.end() ? "" : it->second;
}

}  // namespace ootci
