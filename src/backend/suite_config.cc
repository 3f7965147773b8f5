#include "backend/suite_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "backend/dtype_names.h"
#include "backend/yaml_json.h"

namespace ootci {

std::string to_string(TestMode mode) {
  switch (mode) {
    case TestMode::mandatory_success:
      return "mandatory_success";
    case TestMode::xfail:
      return "xfail";
    case TestMode::xfail_strict:
      return "xfail_strict";
    case TestMode::skip:
      return "skip";
  }
  return "?";
}

std::optional<TestMode> parse_test_mode(const std::string& text) {
  for (TestMode m :
       {TestMode::mandatory_success, TestMode::xfail, TestMode::xfail_strict, TestMode::skip})
    if (to_string(m) == text) return m;
  return std::nullopt;
}

size_t SuiteConfig::rule_count() const {
  size_t n = 0;
  for (const auto& f : files) n += f.rules.size();
  return n;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string indexed(const std::string& path, size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// (line, column) of a "name:line:col: ..." message, so diagnostics can be listed in file order
// rather than in the order the schema happens to be read.
std::pair<long, long> position_in(const std::string& message, const std::string& doc_name) {
  if (message.rfind(doc_name + ":", 0) != 0) return {0, 0};
  size_t pos = doc_name.size() + 1;
  char* end = nullptr;
  long line = std::strtol(message.c_str() + pos, &end, 10);
  if (*end != ':') return {0, 0};
  long col = std::strtol(end + 1, &end, 10);
  return {line, col};
}

void sort_by_position(std::vector<std::string>& messages, const std::string& doc_name) {
  std::stable_sort(messages.begin(), messages.end(), [&](const auto& a, const auto& b) {
    return position_in(a, doc_name) < position_in(b, doc_name);
  });
}

class SuiteReader {
 public:
  explicit SuiteReader(const YamlDoc& doc) : doc_(doc) {}

  SuiteConfigResult read() {
    SuiteConfigResult r;
    r.config.path = doc_.name;
    YamlMap root(doc_, doc_.root, "", &errors_);
    YAML::Node top = root.raw("test_suite_config");
    bool root_is_mapping = doc_.root.IsMap() || doc_.root.IsNull();  // else already reported
    if (!top || top.IsNull()) {
      if (root_is_mapping) fail(doc_.root, "", "missing required key 'test_suite_config'");
    } else if (auto suite = root.map("test_suite_config")) {
      read_suite(*suite, r.config);
    }
    root.finish();
    r.errors = std::move(errors_);
    r.warnings = std::move(warnings_);
    sort_by_position(r.errors, doc_.name);
    sort_by_position(r.warnings, doc_.name);
    return r;
  }

 private:
  void fail(const YAML::Node& node, const std::string& path, const std::string& message) {
    errors_.push_back(yaml_message(doc_, node, path, message));
  }
  std::string where(const YAML::Node& node) const { return yaml_where(doc_, node); }

  // The value of a required key, or nullopt after reporting it missing (absent or null).
  std::optional<YAML::Node> required(YamlMap& m, const std::string& key) {
    YAML::Node n = m.raw(key);
    if (n && !n.IsNull()) return n;
    fail(m.node(), m.path(), fmt::format("missing required key '{}'", key));
    return std::nullopt;
  }

  // The sequence under `key`; nullopt when absent, null, or (reported) not a list.
  std::optional<YAML::Node> list(YamlMap& m, const std::string& key) {
    YAML::Node n = m.raw(key);
    if (!n || n.IsNull()) return std::nullopt;
    if (!n.IsSequence()) {
      fail(n, m.child_path(key), "expected a list");
      return std::nullopt;
    }
    return n;
  }

  std::vector<std::string> strings(YamlMap& m, const std::string& key) {
    std::vector<std::string> out;
    auto n = list(m, key);
    if (!n) return out;
    for (size_t i = 0; i < n->size(); ++i) {
      YAML::Node item = (*n)[i];
      if (!item.IsScalar()) {
        fail(item, indexed(m.child_path(key), i), "expected a string");
        continue;
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  // Tags become pytest marks, so they must be Python identifiers.
  std::vector<std::string> tags(YamlMap& m) {
    std::vector<std::string> out;
    auto n = list(m, "tags");
    if (!n) return out;
    for (size_t i = 0; i < n->size(); ++i) {
      YAML::Node item = (*n)[i];
      std::string path = indexed(m.child_path("tags"), i);
      if (!item.IsScalar()) {
        fail(item, path, "expected a string");
      } else if (!is_identifier(item.Scalar())) {
        fail(item, path, fmt::format("tag '{}' is not a valid identifier", item.Scalar()));
      } else {
        out.push_back(item.Scalar());
      }
    }
    return out;
  }

  // The `name` of an entry: required, and a canonical dtype when `is_dtype`.
  std::optional<std::string> entry_name(YamlMap& m, bool is_dtype) {
    auto n = required(m, "name");
    if (!n) return std::nullopt;
    auto name = m.str("name");
    if (!name || !is_dtype) return name;
    auto canonical = canonical_dtype(*name);
    if (!canonical)
      fail(*n, m.child_path("name"),
           fmt::format("unknown dtype '{}' (expected one of {})", *name, accepted_dtype_names()));
    return canonical;
  }

  std::optional<Precision> precision(YamlMap& m) {
    YAML::Node n = m.raw("precision");
    if (!n || n.IsNull()) return std::nullopt;
    auto pm = m.map("precision");
    if (!pm) return std::nullopt;
    Precision p;
    p.atol = pm->number("atol");
    p.rtol = pm->number("rtol");
    pm->finish();
    return p;
  }

  // Each mapping of the list under `key`, with its path; non-mappings are reported and skipped.
  template <typename F>
  void each_mapping(YamlMap& parent, const std::string& key, F&& read_item) {
    auto n = list(parent, key);
    if (!n) return;
    for (size_t i = 0; i < n->size(); ++i) {
      YAML::Node item = (*n)[i];
      std::string path = indexed(parent.child_path(key), i);
      if (!item.IsMap()) {
        fail(item, path, "expected a mapping");
        continue;
      }
      YamlMap m(doc_, item, path, &errors_);
      read_item(m);
      m.finish();
    }
  }

  // {name, precision?, force_xfail?, description?}; `full` false allows only name/description.
  std::optional<DtypeEntry> dtype_entry(YamlMap& m, bool full) {
    DtypeEntry d;
    d.where = where(m.node());
    d.yaml_path = m.path();
    auto name = entry_name(m, true);
    if (full) {
      d.precision = precision(m);
      d.force_xfail = m.boolean("force_xfail").value_or(false);
    }
    m.str("description");
    if (!name) return std::nullopt;
    d.name = *name;
    return d;
  }

  std::vector<DtypeEntry> dtype_list(YamlMap& parent, const std::string& key, bool full) {
    std::vector<DtypeEntry> out;
    each_mapping(parent, key, [&](YamlMap& m) {
      if (auto d = dtype_entry(m, full)) out.push_back(*d);
    });
    return out;
  }

  // [{name, description?}] as names.
  std::vector<std::string> name_list(YamlMap& parent, const std::string& key, bool is_dtype) {
    std::vector<std::string> out;
    each_mapping(parent, key, [&](YamlMap& m) {
      auto name = entry_name(m, is_dtype);
      m.str("description");
      if (name) out.push_back(*name);
    });
    return out;
  }

  void read_edits(YamlMap& edits, Rule& rule) {
    if (auto ops = edits.map("ops")) {
      each_mapping(*ops, "include", [&](YamlMap& m) {
        auto name = entry_name(m, false);
        OpInclude inc;
        inc.tags = tags(m);
        m.str("description");
        if (!name) return;
        inc.name = *name;
        rule.ops_include.push_back(inc);
      });
      rule.ops_exclude = name_list(*ops, "exclude", false);
      ops->finish();
    }
    if (auto dtypes = edits.map("dtypes")) {
      rule.dtypes_include = dtype_list(*dtypes, "include", true);
      rule.dtypes_exclude = name_list(*dtypes, "exclude", true);
      dtypes->finish();
    }
    if (auto functions = edits.map("functions")) {
      rule.cpu_move = name_list(*functions, "cpu_move", false);
      functions->finish();
    }
    for (const char* key : {"modules", "inputs"}) {
      YAML::Node n = edits.raw(key);
      if (n) rule.extra[key] = yaml_to_json(n);
    }
  }

  // Class::method or method; the class is a Python identifier, the method a regex.
  bool split_name(const YAML::Node& node, const std::string& path, Rule& rule) {
    const std::string& text = node.Scalar();
    std::string cls, method = text;
    size_t sep = text.find("::");
    if (sep != std::string::npos) {
      cls = text.substr(0, sep);
      method = text.substr(sep + 2);
    }
    bool shape_ok = !method.empty() && method.find("::") == std::string::npos &&
                    (sep == std::string::npos || is_identifier(cls));
    if (!shape_ok) {
      fail(node, path,
           fmt::format("invalid test name '{}' (expected Class::method or method)", text));
      return false;
    }
    try {
      std::regex check(method, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(node, path, fmt::format("invalid regex '{}': {}", method, e.what()));
      return false;
    }
    rule.class_name = sep == std::string::npos ? std::nullopt : std::optional<std::string>(cls);
    rule.method = method;
    return true;
  }

  struct Seen {
    TestMode mode;
    std::string where;
  };

  void read_test(YamlMap& m, FileEntry& file, std::map<std::string, Seen>& seen) {
    Rule body;
    bool mode_known = true;  // an unknown mode is reported once, not again as a duplicate
    if (auto mode = m.str("mode")) {
      if (auto parsed = parse_test_mode(*mode)) {
        body.mode = *parsed;
      } else {
        mode_known = false;
        fail(m.raw("mode"), m.child_path("mode"),
             fmt::format("unknown mode '{}' (expected mandatory_success, xfail, xfail_strict or "
                         "skip)",
                         *mode));
      }
    }
    body.tags = tags(m);
    body.labels = strings(m, "labels");
    body.no_grad = m.boolean("no_grad").value_or(false);
    body.precision = precision(m);
    if (auto edits = m.map("edits")) {
      read_edits(*edits, body);
      edits->finish();
    }
    if (YAML::Node selectors = m.raw("selectors"))
      body.extra["selectors"] = yaml_to_json(selectors);

    auto names = required(m, "names");
    if (!names) return;
    std::vector<std::pair<YAML::Node, std::string>> name_nodes;
    std::string names_path = m.child_path("names");
    if (names->IsScalar()) {
      name_nodes.emplace_back(*names, names_path);  // Spyre's schema allows a single name
    } else if (names->IsSequence()) {
      for (size_t i = 0; i < names->size(); ++i)
        name_nodes.emplace_back((*names)[i], indexed(names_path, i));
    } else {
      fail(*names, names_path, "expected a list");
    }
    for (const auto& [node, path] : name_nodes) {
      if (!node.IsScalar()) {
        fail(node, path, "expected a string");
        continue;
      }
      Rule rule = body;
      if (!split_name(node, path, rule)) continue;
      rule.source = where(node);
      if (!mode_known) continue;
      auto [it, fresh] = seen.try_emplace(node.Scalar(), Seen{rule.mode, rule.source});
      if (!fresh) {
        if (it->second.mode != rule.mode) {
          fail(
              node, path,
              fmt::format("conflicting duplicate: '{}' is mode {} here but {} at {}", node.Scalar(),
                          to_string(rule.mode), to_string(it->second.mode), it->second.where));
        } else {
          warnings_.push_back(
              yaml_message(doc_, node, path,
                           fmt::format("duplicate '{}' (also listed at {} with the same mode)",
                                       node.Scalar(), it->second.where)));
        }
      }
      file.rules.push_back(std::move(rule));
    }
  }

  void read_file(YamlMap& m, FileEntry& file) {
    file.yaml_path = m.path();
    if (auto path = required(m, "path")) {
      if (auto text = m.str("path")) {
        file.path = *text;
        file.path_where = where(*path);
      }
    }
    if (auto mode = m.str("unlisted_test_mode")) {
      YAML::Node n = m.raw("unlisted_test_mode");
      file.unlisted_test_mode = parse_test_mode(*mode);
      file.unlisted_where = where(n);
      if (!file.unlisted_test_mode)
        fail(n, m.child_path("unlisted_test_mode"),
             fmt::format("unknown mode '{}' (expected mandatory_success, xfail, xfail_strict or "
                         "skip)",
                         *mode));
    }
    std::map<std::string, Seen> seen;
    each_mapping(m, "tests", [&](YamlMap& t) { read_test(t, file, seen); });
  }

  std::optional<OpEntry> op_entry(const YAML::Node& node, const std::string& path) {
    OpEntry op;
    op.where = where(node);
    op.yaml_path = path;
    if (node.IsScalar()) {
      op.name = node.Scalar();
      return op;
    }
    if (!node.IsMap()) {
      fail(node, path, "expected a string or a mapping");
      return std::nullopt;
    }
    YamlMap m(doc_, node, path, &errors_);
    auto name = entry_name(m, false);
    op.force_xfail = m.boolean("force_xfail").value_or(false);
    if (list(m, "dtypes")) op.dtypes = dtype_list(m, "dtypes", true);
    m.str("description");
    m.finish();
    if (!name) return std::nullopt;
    op.name = *name;
    return op;
  }

  void read_global(YamlMap& g, GlobalConfig& global) {
    if (list(g, "supported_dtypes"))
      global.supported_dtypes = dtype_list(g, "supported_dtypes", true);
    if (auto ops = list(g, "supported_ops")) {
      global.supported_ops.emplace();
      for (size_t i = 0; i < ops->size(); ++i)
        if (auto op = op_entry((*ops)[i], indexed(g.child_path("supported_ops"), i)))
          global.supported_ops->push_back(*op);
    }
    for (const char* key : {"supported_modules", "input_config", "devices"}) {
      YAML::Node n = g.raw(key);
      if (!n) continue;
      global.extra[key] = yaml_to_json(n);
      global.extra_where[key] = where(n);
    }
  }

  void read_suite(YamlMap& suite, SuiteConfig& config) {
    if (list(suite, "labels")) config.labels = strings(suite, "labels");
    if (required(suite, "files")) {
      each_mapping(suite, "files", [&](YamlMap& m) {
        FileEntry file;
        read_file(m, file);
        config.files.push_back(std::move(file));
      });
    }
    if (auto g = suite.map("global")) {
      read_global(*g, config.global);
      g->finish();
    }
    suite.finish();
  }

  const YamlDoc& doc_;
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
};

}  // namespace

SuiteConfigResult parse_suite_config(const YamlDoc& doc) {
  return SuiteReader(doc).read();
}

SuiteConfigResult load_suite_config(const std::string& path) {
  try {
    YamlDoc doc = load_yaml_file(path);
    return parse_suite_config(doc);
  } catch (const Error& e) {
    SuiteConfigResult r;
    r.config.path = path;
    r.errors.push_back(e.what());
    return r;
  }
}

}  // namespace ootci
