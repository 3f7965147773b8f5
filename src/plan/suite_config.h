#pragma once
// One Torch Spyre `test_suite_config` file (RFC 1287, as described in docs/plan.md), read into
// structs with every problem reported at once.
#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/yaml_doc.h"
#include "plan/test_mode.h"

namespace ootci {

struct Precision {
  std::optional<double> atol;
  std::optional<double> rtol;
  bool operator==(const Precision&) const = default;
};

// A dtype in global.supported_dtypes, an op's dtypes, or edits.dtypes.include.
struct DtypeEntry {
  std::string name;  // canonical ("half" is stored as "float16")
  std::optional<Precision> precision;
  bool force_xfail = false;
  std::string where;      // "file:line:col" of the entry, for merge conflicts
  std::string yaml_path;  // "test_suite_config.global.supported_dtypes[0]"
};

// An entry of global.supported_ops; a plain string reads as {name}.
struct OpEntry {
  std::string name;
  bool force_xfail = false;
  std::optional<std::vector<DtypeEntry>> dtypes;  // nullopt: the op declares no dtypes
  std::string where;
  std::string yaml_path;
};

// An entry of edits.ops.include. With `sample_inputs_func` it is a model-derived op test (Spyre's
// test_model_ops_db): the op runs on inputs built from tensor specs and is not added to upstream
// @ops lists. Without it (an ootci extension) the OpInfo of that name joins the test's @ops list.
struct OpInclude {
  std::string name;
  std::vector<std::string> tags;
  std::optional<std::string> description;
  nlohmann::json sample_inputs_func;  // {"args": [...], "kwargs": {...}} as written, or null
  bool operator==(const OpInclude&) const = default;
};

// One name of one `tests` entry: the entry's settings apply to each of its names separately.
// As in Spyre, only the base method name is matched: the class part is informative.
struct Rule {
  std::optional<std::string> class_name;  // as written before `::`; nullopt for a plain name
  std::string method;                     // as written after `::`
  bool exact = true;  // a plain identifier: the exact base name; else a regex, full match
  TestMode mode = TestMode::kMandatorySuccess;
  std::vector<std::string> tags;
  std::vector<std::string> labels;
  bool no_grad = false;
  std::optional<Precision> precision;
  std::vector<OpInclude> ops_include;
  std::vector<std::string> ops_exclude;
  std::vector<DtypeEntry> dtypes_include;
  std::vector<std::string> dtypes_exclude;
  std::vector<std::string> cpu_move;
  std::vector<nlohmann::json> modules_include;  // edits.modules.include items, as written
  std::vector<std::string> modules_exclude;
  // Accepted but not applied, carried verbatim: edits.inputs, selectors.
  nlohmann::json extra = nlohmann::json::object();
  std::string source;  // "file:line:col" of the name in `names`
};

struct FileEntry {
  std::string path;                            // as written, tokens and globs unexpanded
  std::string path_where;                      // "file:line:col" of the path value
  std::string yaml_path;                       // "test_suite_config.files[0]"
  std::optional<TestMode> unlisted_test_mode;  // nullopt when not set (Spyre's default is xfail)
  std::string unlisted_where;
  std::vector<std::string> labels;  // files[].labels, besides the suite's
  std::vector<Rule> rules;
};

struct GlobalConfig {
  std::optional<std::vector<DtypeEntry>> supported_dtypes;
  std::optional<std::vector<OpEntry>> supported_ops;
  // supported_modules, input_config and devices, verbatim (after checks), each with where it
  // was set.
  nlohmann::json extra = nlohmann::json::object();
  std::map<std::string, std::string> extra_where;
};

struct SuiteConfig {
  std::string path;                 // the YAML document's name
  std::vector<std::string> labels;  // none: Spyre's CI never selects the file (plan lint says so)
  std::vector<FileEntry> files;
  GlobalConfig global;
  size_t rule_count() const;
};

struct SuiteConfigResult {
  SuiteConfig config;
  std::vector<std::string> errors;    // "file:line:col: yaml.path: message", in file order
  std::vector<std::string> warnings;  // same form: duplicates, unknown keys (Spyre ignores them)
  bool ok() const { return errors.empty(); }
};

// `strict` turns unknown keys from warnings into errors (`ootci plan check --strict`).
SuiteConfigResult parse_suite_config(const YamlDoc& doc, bool strict = false);
// Reads and parses; an unreadable file or invalid YAML is reported as an error, not thrown.
SuiteConfigResult load_suite_config(const std::string& path, bool strict = false);

// Whether a `names` entry is an exact base name (Spyre: `\w+`) rather than a regex.
bool is_exact_test_name(const std::string& method);

}  // namespace ootci
