#include "select/decisions.h"

#include <algorithm>
#include <regex>

namespace ootci {

std::pair<std::string, std::string> split_base(const std::string& base) {
  size_t sep = base.find("::");
  if (sep == std::string::npos) return {"", base};
  return {base.substr(0, sep), base.substr(sep + 2)};
}

std::string regex_escape(const std::string& text) {
  static const std::string kSpecial = R"(\.^$|?*+()[]{})";
  std::string out;
  for (char c : text) {
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string variant_config_name(const std::string& base, const std::string& variant) {
  std::string cls = split_base(base).first;
  return (cls.empty() ? "" : cls + "::") + regex_escape(variant);
}

bool excludes(const NameDecision& d, const VariantEvidence& v) {
  auto listed = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (!d.dtypes_exclude.empty()) {
    size_t i = 0;
    while (i <= v.dtype.size()) {
      size_t end = std::min(v.dtype.find(',', i), v.dtype.size());
      if (end > i && listed(d.dtypes_exclude, v.dtype.substr(i, end - i))) return true;
      i = end + 1;
    }
  }
  if (!d.ops_exclude.empty() && !v.op.empty()) {
    std::string formatted = v.op;
    std::replace(formatted.begin(), formatted.end(), '.', '_');
    if (listed(d.ops_exclude, v.op) || listed(d.ops_exclude, formatted)) return true;
  }
  return false;
}

DecisionIndex::DecisionIndex(const std::vector<NameDecision>& decisions) {
  for (const auto& d : decisions) by_name_[d.name] = &d;  // a repeated name: the last wins
}

const NameDecision* DecisionIndex::governing(const std::string& base,
                                             const VariantEvidence& v) const {
  auto it = by_name_.find(variant_config_name(base, v.name));
  if (it != by_name_.end()) return it->second;
  it = by_name_.find(base);
  return it == by_name_.end() ? nullptr : it->second;
}

std::optional<TestMode> DecisionIndex::mode(const std::string& base,
                                            const VariantEvidence& v) const {
  const NameDecision* d = governing(base, v);
  if (!d) return std::nullopt;
  return excludes(*d, v) ? TestMode::skip : d->mode;
}

void attach_to_evidence(std::vector<NameDecision>& decisions, const FileEvidence& evidence) {
  std::map<std::string, std::pair<std::string, std::string>>
      variant_names;  // name -> base, variant
  for (const auto& b : evidence.bases)
    for (const auto& v : b.variants)
      variant_names.emplace(variant_config_name(b.base, v.name), std::pair{b.base, v.name});
  for (auto& d : decisions) {
    d.base = d.name;
    d.variant.clear();
    if (evidence.find(d.name)) continue;
    auto it = variant_names.find(d.name);
    if (it == variant_names.end()) continue;
    d.base = it->second.first;
    d.variant = it->second.second;
  }
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

bool human_owns(const std::vector<Rule>& human_rules, const NameDecision& d) {
  auto [cls, method] = split_base(d.base);
  for (const Rule& r : human_rules) {
    if (r.class_name && *r.class_name != cls) continue;
    if (full_match(r.method, method)) return true;
    if (d.is_variant() && full_match(r.method, d.variant)) return true;
  }
  return false;
}

}  // namespace ootci
