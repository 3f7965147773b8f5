#pragma once
// The names ootci writes into test-suite configs, each with the settings of its entry, and how
// Torch Spyre's framework applies them to a variant (docs/select.md, "How a config decides a
// variant"): the class part of a name is dropped, an entry names a base method exactly, and among
// several entries for one method the one whose edits.dtypes.include covers the variant's dtype
// wins, else one without a dtype restriction, else the first.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "discover/variant_evidence.h"
#include "plan/suite_config.h"

namespace ootci {

// One name of a generated config entry, with the settings of its entry. The name is always a
// base ("Class::method", or "method" outside a class): Spyre matches no variant names.
struct NameDecision {
  std::string name;  // as written in `names`
  TestMode mode = TestMode::kMandatorySuccess;
  std::vector<std::string> ops_exclude;     // formatted OpInfo names ('_' for '.'), sorted
  std::vector<std::string> dtypes_exclude;  // sorted
  // Non-empty: a dtype-restricted entry, which Spyre picks for variants of these dtypes and which
  // is written before the method's unrestricted entry. Sorted.
  std::vector<std::string> dtypes_include;
  // The precision an included dtype carries (tolerance proposals), by dtype.
  std::map<std::string, Precision> dtype_precision;
  std::string reason;
  bool restricted() const { return !dtypes_include.empty(); }
  // Whether two names belong in one entry (same mode, edits and reason).
  bool same_settings(const NameDecision& o) const {
    return mode == o.mode && ops_exclude == o.ops_exclude && dtypes_exclude == o.dtypes_exclude &&
           dtypes_include == o.dtypes_include && dtype_precision == o.dtype_precision &&
           reason == o.reason;
  }
};

// "Class::method" -> {"Class", "method"}; "method" -> {"", "method"}.
std::pair<std::string, std::string> split_base(const std::string& base);
// The method a name matches under Spyre's rules: the part after "::".
inline std::string method_of(const std::string& name) {
  return split_base(name).second;
}

// The dtype Spyre reads from a variant's name (`extract_dtype_from_name`: the longest dtype name
// found as "_<dtype>_" or a "_<dtype>" suffix; "half" is float16), or "" when it finds none.
std::string spyre_dtype(const std::string& variant_name);
// The dtype both Spyre (from the name) and ootci (from the variant's parameters) see for it, or ""
// when they may differ: no dtype, several dtypes, or a name that reads as another dtype. Only such
// a variant's dtype may carry a dtype edit, since only then do both frameworks apply it alike.
std::string unambiguous_dtype(const VariantEvidence& v);
// "linalg.vector_norm" -> "linalg_vector_norm": the spelling in variant names, which Spyre matches
// edits.ops.exclude against (and ootci accepts).
std::string formatted_op(const std::string& op);
// Whether excluding `excluded` (formatted) removes a variant of `op` under Spyre: the same name,
// or one it prefixes before a '_' ("max" removes "max_binary", and also "max_pool2d").
bool op_exclusion_covers(const std::string& excluded, const std::string& op);

// How the written config decides each variant, as Spyre's framework does (docs/select.md).
class DecisionIndex {
 public:
  // `decisions` in the order they are written (a dtype-restricted entry before its method's
  // unrestricted one); `global_dtypes` is the file's global.supported_dtypes (nullopt: none).
  explicit DecisionIndex(const std::vector<NameDecision>& decisions,
                         std::optional<std::set<std::string>> global_dtypes = std::nullopt);
  // The entry Spyre picks for the variant of `base`, or nullptr when no name covers it.
  const NameDecision* governing(const std::string& base, const VariantEvidence& v) const;
  // The mode the variant runs in: the governing entry's; skip when its edits (or the global
  // dtypes) leave the variant out; nullopt when no name covers it.
  std::optional<TestMode> mode(const std::string& base, const VariantEvidence& v) const;

 private:
  std::map<std::string, std::vector<const NameDecision*>> by_method_;
  std::optional<std::set<std::string>> global_;
};

// Whether the entry's edits leave the variant out (dtypes.exclude on its dtypes or the dtype in its
// name, ops.exclude on its op under Spyre's prefix rule).
bool excludes(const NameDecision& d, const VariantEvidence& v);

// Whether a human-written rule covers the tests of `base`: its method pattern fully matches the
// base's method. The class is ignored, as Spyre ignores it.
bool human_owns(const std::vector<Rule>& human_rules, const std::string& base);

}  // namespace ootci
