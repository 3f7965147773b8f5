#pragma once
// The names ootci writes into test-suite configs, each with the settings of its entry, and how
// the plan applies them to a variant (docs/plan.md: the last matching rule wins).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/suite_config.h"
#include "select/variant_evidence.h"

namespace ootci {

// One name of a generated config entry, with the settings of its entry.
struct NameDecision {
  std::string name;     // as written in `names`: "Class::method" or "Class::<escaped variant>"
  std::string base;     // the config name it belongs to
  std::string variant;  // the unescaped variant name when the name selects one variant
  TestMode mode = TestMode::mandatory_success;
  std::vector<std::string> ops_exclude;     // sorted
  std::vector<std::string> dtypes_exclude;  // sorted
  std::string reason;
  bool is_variant() const { return !variant.empty(); }
  // Whether two names belong in one entry (same mode, edits and reason).
  bool same_settings(const NameDecision& o) const {
    return mode == o.mode && ops_exclude == o.ops_exclude && dtypes_exclude == o.dtypes_exclude &&
           reason == o.reason;
  }
};

// "Class::method" -> {"Class", "method"}; "method" -> {"", "method"}.
std::pair<std::string, std::string> split_base(const std::string& base);
// A regex (Python and ECMAScript) matching exactly `text`.
std::string regex_escape(const std::string& text);
// The name selecting exactly one variant of `base`.
std::string variant_config_name(const std::string& base, const std::string& variant);

// Whether an entry's edits exclude the variant (dtypes.exclude, or ops.exclude by OpInfo name or
// its formatted name with '_' for '.').
bool excludes(const NameDecision& d, const VariantEvidence& v);

// The decision governing each variant, for names ootci writes (literal, not patterns): the
// variant's own name wins over its base's, as it is written after every base name.
class DecisionIndex {
 public:
  explicit DecisionIndex(const std::vector<NameDecision>& decisions);
  // nullptr when no name covers the variant.
  const NameDecision* governing(const std::string& base, const VariantEvidence& v) const;
  // The mode the variant runs in: the governing name's, skip when its edits exclude the
  // variant; nullopt when no name covers it.
  std::optional<TestMode> mode(const std::string& base, const VariantEvidence& v) const;

 private:
  std::map<std::string, const NameDecision*> by_name_;
};

// Sets `base` and `variant` of names read back from a config, from the evidence: a name equal to
// a config name is that base's; a name selecting one known variant is that variant's. Other
// names keep base = name.
void attach_to_evidence(std::vector<NameDecision>& decisions, const FileEvidence& evidence);

// Whether a human-written rule covers the decision's tests: its class matches and its method
// pattern fully matches the base's method (or, for a variant's name, the variant's name).
bool human_owns(const std::vector<Rule>& human_rules, const NameDecision& d);

}  // namespace ootci
