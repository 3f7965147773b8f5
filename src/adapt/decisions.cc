#include "adapt/decisions.h"

#include <algorithm>
#include <regex>

#include "base/text.h"

namespace ootci {

namespace {

bool listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The dtypes a variant may be known by: its parameters' and the one in its name.
std::vector<std::string> dtypes_of(const VariantEvidence& v) {
  std::vector<std::string> out = split(v.dtype, ',');
  std::string named = spyre_dtype(v.name);
  if (!named.empty() && !listed(out, named)) out.push_back(named);
  return out;
}

}  // namespace

std::pair<std::string, std::string> split_base(const std::string& base) {
  size_t sep = base.find("::");
  if (sep == std::string::npos) return {"", base};
  return {base.substr(0, sep), base.substr(sep + 2)};
}

std::string spyre_dtype(const std::string& variant_name) {
  // DTYPE_NAMES_ORDERED of Spyre's oot_test_constants.py: longest first, ties in its map's order.
  static const char* kOrdered[] = {"complex128", "complex32", "complex64", "bfloat16", "float16",
                                   "float32",    "float64",   "uint16",    "uint32",   "uint64",
                                   "int16",      "int32",     "int64",     "uint8",    "int8",
                                   "bool",       "half"};
  for (const char* dtype : kOrdered) {
    std::string d = dtype;
    if (variant_name.find("_" + d + "_") != std::string::npos || ends_with(variant_name, "_" + d))
      return d == "half" ? "float16" : d;
  }
  return "";
}

std::string unambiguous_dtype(const VariantEvidence& v) {
  std::vector<std::string> dtypes = split(v.dtype, ',');
  if (dtypes.size() != 1 || spyre_dtype(v.name) != dtypes[0]) return "";
  return dtypes[0];
}

std::string formatted_op(const std::string& op) {
  std::string out = op;
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

bool op_exclusion_covers(const std::string& excluded, const std::string& op) {
  std::string f = formatted_op(op);
  return f == excluded || op == excluded || f.rfind(excluded + "_", 0) == 0;
}

bool excludes(const NameDecision& d, const VariantEvidence& v) {
  for (const auto& dtype : dtypes_of(v))
    if (listed(d.dtypes_exclude, dtype)) return true;
  if (v.op.empty()) return false;
  return std::any_of(d.ops_exclude.begin(), d.ops_exclude.end(),
                     [&](const std::string& x) { return op_exclusion_covers(x, v.op); });
}

DecisionIndex::DecisionIndex(const std::vector<NameDecision>& decisions,
                             std::optional<std::set<std::string>> global_dtypes)
    : global_(std::move(global_dtypes)) {
  // Restricted entries first, each group in the given order: the order they are written in.
  for (bool restricted : {true, false})
    for (const auto& d : decisions)
      if (d.restricted() == restricted) by_method_[method_of(d.name)].push_back(&d);
}

const NameDecision* DecisionIndex::governing(const std::string& base,
                                             const VariantEvidence& v) const {
  auto it = by_method_.find(method_of(base));
  if (it == by_method_.end()) return nullptr;
  const std::vector<const NameDecision*>& entries = it->second;
  if (entries.size() == 1) return entries[0];
  // _select_entry_for_variant: an entry whose dtype set (its includes, else the global dtypes)
  // holds the dtype in the variant's name; else one with no dtype set at all; else the first.
  std::string dtype = spyre_dtype(v.name);
  auto dtype_set_has = [&](const NameDecision* d) {
    if (d->restricted()) return listed(d->dtypes_include, dtype);
    return global_ && global_->count(dtype) > 0;
  };
  if (!dtype.empty())
    for (const NameDecision* d : entries)
      if (dtype_set_has(d)) return d;
  if (!global_)
    for (const NameDecision* d : entries)
      if (!d->restricted()) return d;
  return entries[0];
}

std::optional<TestMode> DecisionIndex::mode(const std::string& base,
                                            const VariantEvidence& v) const {
  const NameDecision* d = governing(base, v);
  if (!d) return std::nullopt;
  if (excludes(*d, v)) return TestMode::kSkip;
  if (global_)
    for (const auto& dtype : dtypes_of(v))
      if (!global_->count(dtype) && !listed(d->dtypes_include, dtype)) return TestMode::kSkip;
  return d->mode;
}

namespace {

bool full_match(const std::string& pattern, const std::string& text) {
  if (pattern == text) return true;
  try {
    return std::regex_match(text, std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return false;  // the parser rejects such patterns; a literal compare was all there was
  }
}

}  // namespace

bool human_owns(const std::vector<Rule>& human_rules, const std::string& base) {
  std::string method = method_of(base);
  return std::any_of(human_rules.begin(), human_rules.end(),
                     [&](const Rule& r) { return full_match(r.method, method); });
}

}  // namespace ootci
