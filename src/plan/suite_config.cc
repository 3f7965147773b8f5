#include "plan/suite_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "plan/dtype_names.h"
#include "plan/yaml_json.h"

namespace ootci {

size_t SuiteConfig::rule_count() const {
  size_t n = 0;
  for (const auto& f : files) n += f.rules.size();
  return n;
}

bool is_exact_test_name(const std::string& method) {
  return !method.empty() && std::all_of(method.begin(), method.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

namespace {

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
  SuiteReader(const YamlDoc& doc, bool strict) : doc_(doc), strict_(strict) {}

  SuiteConfigResult read() {
    SuiteConfigResult r;
    r.config.path = doc_.name;
    YamlMap root = mapping(doc_.root, "");
    YAML::Node top = root.raw("test_suite_config");
    bool root_is_mapping = doc_.root.IsMap() || doc_.root.IsNull();  // else already reported
    if (!top || top.IsNull()) {
      if (root_is_mapping) fail(doc_.root, "", "missing required key 'test_suite_config'");
    } else if (auto suite = root.map("test_suite_config")) {
      read_suite(*suite, r.config);
    }
    root.finish();
    const std::string ignored = " (ignored)";
    for (auto& w : unknown_) {
      if (strict_ && w.ends_with(ignored)) w.resize(w.size() - ignored.size());
      (strict_ ? errors_ : warnings_).push_back(std::move(w));
    }
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

  // A mapping of the schema: unknown keys are warnings (errors under --strict), as Spyre's
  // models ignore them.
  YamlMap mapping(const YAML::Node& node, const std::string& path) {
    YamlMap m(doc_, node, path, &errors_);
    m.report_unknown_keys_to(&unknown_);
    return m;
  }

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
      YamlMap m = mapping(item, path);
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

  // A list of integers under `key` (each at least `min`), or nullopt after reporting.
  std::optional<std::vector<int64_t>> int_list(YamlMap& m, const std::string& key, int64_t min) {
    auto n = list(m, key);
    if (!n) return std::nullopt;
    std::vector<int64_t> out;
    bool ok = true;
    for (size_t i = 0; i < n->size(); ++i) {
      YAML::Node item = (*n)[i];
      int64_t v = 0;
      std::string path = indexed(m.child_path(key), i);
      if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, v)) {
        fail(item, path, "expected an integer");
        ok = false;
      } else if (v < min) {
        fail(item, path, fmt::format("must be at least {}, not {}", min, v));
        ok = false;
      } else {
        out.push_back(v);
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // A tensor spec (Spyre's InputTensorSpec). Unknown keys here are errors, as in Spyre.
  void tensor_spec(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) {
      fail(node, path, "expected a mapping (a tensor spec)");
      return;
    }
    YamlMap t(doc_, node, path, &errors_);
    if (!t.raw("shape")) fail(node, path, "missing required key 'shape'");
    auto shape = int_list(t, "shape", 0);
    if (auto dtype = required(t, "dtype"); dtype && dtype->IsScalar()) {
      std::string text = dtype->Scalar();
      std::string bare = text.rfind("torch.", 0) == 0 ? text.substr(6) : text;
      if (!canonical_dtype(bare))
        fail(*dtype, t.child_path("dtype"),
             fmt::format("unknown dtype '{}' (expected one of {}, optionally as torch.<name>)",
                         text, accepted_dtype_names()));
    } else if (dtype) {
      fail(*dtype, t.child_path("dtype"), "expected a string");
    }
    t.str("device");
    std::string init = t.str("init").value_or("rand");
    static const std::vector<std::string> kInits = {"rand", "randn",  "randint", "full",   "zeros",
                                                    "ones", "arange", "eye",     "xavier", "file"};
    bool init_known = std::find(kInits.begin(), kInits.end(), init) != kInits.end();
    if (!init_known)
      fail(t.raw("init"), t.child_path("init"),
           fmt::format("unknown init '{}' (expected one of {})", init, fmt::join(kInits, ", ")));
    std::set<std::string> given;
    if (auto args = t.map("init_args")) {
      args->report_unknown_keys_to(&unknown_);
      for (const char* key : {"low", "high"})
        if (args->integer(key)) given.insert(key);
      if (args->number("fill_value")) given.insert("fill_value");
      for (const char* key : {"path", "key"})
        if (args->str(key)) given.insert(key);
      args->finish();
    }
    auto needs = [&](const char* arg) {
      if (!given.count(arg))
        fail(node, t.child_path("init_args"),
             fmt::format("init '{}' needs init_args.{}", init, arg));
    };
    if (init == "randint") needs("high");
    if (init == "full") needs("fill_value");
    if (init == "file") needs("path");
    if (shape) {
      size_t rank = shape->size();
      auto rank_must = [&](bool ok, const char* what) {
        if (!ok)
          fail(t.raw("shape"), t.child_path("shape"),
               fmt::format("init '{}' needs a {} shape, not {} dimensions", init, what, rank));
      };
      if (init == "arange") rank_must(rank == 1, "1-D");
      if (init == "eye") rank_must(rank == 2, "2-D");
      if (init == "xavier") rank_must(rank >= 2, "2-D or larger");
    }
    if (auto stride = int_list(t, "stride", 0); stride && shape && stride->size() != shape->size())
      fail(t.raw("stride"), t.child_path("stride"),
           fmt::format("has {} entries but shape has {}", stride->size(), shape->size()));
    t.integer("storage_offset", 0);
    if (YAML::Node layout = t.raw("device_layout"); layout && !layout.IsNull()) {
      if (!layout.IsMap()) {
        fail(layout, t.child_path("device_layout"), "expected a mapping");
      } else {
        YamlMap l(doc_, layout, t.child_path("device_layout"), &errors_);
        for (const char* key : {"device_size", "stride_map"}) {
          if (!l.raw(key)) fail(layout, l.path(), fmt::format("missing required key '{}'", key));
          int_list(l, key, INT64_MIN);
        }
        if (required(l, "device_dtype")) l.str("device_dtype");
        l.finish();
      }
    }
    t.finish();
  }

  // The HuggingFace-built arguments (config, module, cache) are checked for shape only: building
  // them needs `transformers`, and a variant that cannot is skipped with that reason at run time.
  void hf_argument(const std::string& kind, const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) {
      fail(node, path, "expected a mapping");
      return;
    }
    YamlMap m = mapping(node, path);
    for (const char* key : {"config_path", "model_id"}) m.str(key);
    for (const char* key : {"config_kwargs", "config_overrides"})
      m.map(key);  // any mapping: keyword arguments of a HuggingFace constructor
    if (kind == "module") {
      if (required(m, "module_path")) m.str("module_path");
      m.map("module_kwargs");
    }
    if (kind == "cache") {
      if (required(m, "cache_path")) m.str("cache_path");
      if (required(m, "layer_idx")) m.integer("layer_idx", 0);
      m.integer("max_cache_len", 0);
      for (const char* key : {"key", "value"})
        if (auto spec = required(m, key)) tensor_spec(*spec, m.child_path(key));
    }
    m.finish();
  }

  // One positional argument: a mapping with exactly one of Spyre's argument kinds.
  void input_argument(const YAML::Node& node, const std::string& path) {
    static const std::vector<std::string> kKinds = {"tensor", "tensor_list", "value", "py",
                                                    "config", "module",      "cache"};
    if (!node.IsMap() || node.size() != 1) {
      fail(node, path, fmt::format("expected a mapping with one of {}", fmt::join(kKinds, ", ")));
      return;
    }
    std::string kind = node.begin()->first.Scalar();
    YAML::Node value = node.begin()->second;
    std::string value_path = path + "." + kind;
    if (kind == "tensor") {
      tensor_spec(value, value_path);
    } else if (kind == "tensor_list") {
      if (!value.IsSequence()) {
        fail(value, value_path, "expected a list of tensor specs");
        return;
      }
      for (size_t i = 0; i < value.size(); ++i) tensor_spec(value[i], indexed(value_path, i));
    } else if (kind == "value") {
      // Any YAML value: a number, a bool, null, a string (a Python literal such as "(1, 2)").
    } else if (kind == "py") {
      if (!value.IsScalar()) fail(value, value_path, "expected a string (a Python literal)");
    } else if (kind == "config" || kind == "module" || kind == "cache") {
      hf_argument(kind, value, value_path);
    } else {
      fail(node.begin()->first, value_path,
           fmt::format("unknown argument kind '{}' (expected one of {})", kind,
                       fmt::join(kKinds, ", ")));
    }
  }

  // An inputs edit (`sample_inputs_func`, `constructor_inputs`, `forward_inputs`): `args` and
  // `kwargs`. Returned as JSON for the test process, which builds the inputs.
  nlohmann::json inputs_edit(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) {
      fail(node, path, "expected a mapping with args and kwargs");
      return nullptr;
    }
    YamlMap m = mapping(node, path);
    if (auto args = list(m, "args"))
      for (size_t i = 0; i < args->size(); ++i)
        input_argument((*args)[i], indexed(m.child_path("args"), i));
    m.map("kwargs");  // any mapping: keyword arguments of the op
    m.finish();
    return yaml_to_json(node);
  }

  // `forward_inputs`: one inputs edit or a list of them.
  void inputs_edits(YamlMap& m, const std::string& key) {
    YAML::Node n = m.raw(key);
    if (!n || n.IsNull()) return;
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) inputs_edit(n[i], indexed(m.child_path(key), i));
    } else {
      inputs_edit(n, m.child_path(key));
    }
  }

  // An edits.modules.include item, as written once checked.
  std::optional<nlohmann::json> module_item(YamlMap& m) {
    auto name = entry_name(m, false);
    m.str("module_path");
    m.str("description");
    m.boolean("apply_device_layout");
    for (const char* key : {"sample_inputs_func", "constructor_inputs", "forward_inputs"})
      inputs_edits(m, key);
    if (!name) return std::nullopt;
    return yaml_to_json(m.node());
  }

  // A global.supported_modules entry: a name, or {name, force_xfail, dtypes, inputs}.
  void supported_module(const YAML::Node& node, const std::string& path) {
    if (node.IsScalar()) return;
    if (!node.IsMap()) {
      fail(node, path, "expected a string or a mapping");
      return;
    }
    YamlMap m = mapping(node, path);
    entry_name(m, false);
    m.str("description");
    m.boolean("force_xfail");
    if (list(m, "dtypes")) dtype_list(m, "dtypes", true);
    for (const char* key : {"constructor_inputs", "forward_inputs"}) inputs_edits(m, key);
    m.finish();
  }

  void read_edits(YamlMap& edits, Rule& rule) {
    if (auto ops = edits.map("ops")) {
      each_mapping(*ops, "include", [&](YamlMap& m) {
        auto name = entry_name(m, false);
        OpInclude inc;
        inc.tags = strings(m, "tags");
        inc.description = m.str("description");
        if (YAML::Node inputs = m.raw("sample_inputs_func"); inputs && !inputs.IsNull())
          inc.sample_inputs_func = inputs_edit(inputs, m.child_path("sample_inputs_func"));
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
    if (auto modules = edits.map("modules")) {
      each_mapping(*modules, "include", [&](YamlMap& m) {
        if (auto item = module_item(m)) rule.modules_include.push_back(std::move(*item));
      });
      rule.modules_exclude = name_list(*modules, "exclude", false);
      modules->finish();
    }
    if (YAML::Node n = edits.raw("inputs")) rule.extra["inputs"] = yaml_to_json(n);
  }

  // `Class::method` or `method`. As in Spyre, the class part is dropped when matching (so it may
  // be anything, even a pattern); a plain identifier is an exact base name, anything else a regex.
  bool split_name(const YAML::Node& node, const std::string& path, Rule& rule) {
    const std::string& text = node.Scalar();
    std::string method = text;
    std::optional<std::string> cls;
    size_t sep = text.find("::");
    if (sep != std::string::npos) {
      cls = text.substr(0, sep);
      method = text.substr(sep + 2);
    }
    if (method.empty() || method.find("::") != std::string::npos) {
      fail(node, path,
           fmt::format("invalid test name '{}' (expected Class::method or method)", text));
      return false;
    }
    rule.exact = is_exact_test_name(method);
    if (!rule.exact) {
      try {
        std::regex check(method, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        fail(node, path, fmt::format("invalid regex '{}': {}", method, e.what()));
        return false;
      }
    }
    rule.class_name = cls;
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
    body.tags = strings(m, "tags");  // any string: a sanitised mark plus a JUnit property
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
      // Spyre matches base names only, so `A::test_x` and `B::test_x` are the same test.
      // An entry restricted to some dtypes (dtypes.include) is a deliberate per-dtype override,
      // which Spyre's selection resolves by dtype: only entries for the same dtypes collide.
      std::string key = rule.method;
      for (const auto& d : rule.dtypes_include) key += "|" + d.name;
      auto [it, fresh] = seen.try_emplace(key, Seen{rule.mode, rule.source});
      if (!fresh) {
        std::string message =
            it->second.mode != rule.mode
                ? fmt::format(
                      "duplicate '{}' with mode {} here but {} at {}: the first one wins (as in "
                      "Spyre) unless a dtype edit selects this one",
                      node.Scalar(), to_string(rule.mode), to_string(it->second.mode),
                      it->second.where)
                : fmt::format("duplicate '{}' (also listed at {} with the same mode)",
                              node.Scalar(), it->second.where);
        warnings_.push_back(yaml_message(doc_, node, path, message));
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
    file.labels = strings(m, "labels");
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
    YamlMap m = mapping(node, path);
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
    if (auto modules = list(g, "supported_modules")) {
      for (size_t i = 0; i < modules->size(); ++i)
        supported_module((*modules)[i], indexed(g.child_path("supported_modules"), i));
    }
    if (auto input = g.map("input_config")) {
      input->integer("seed");
      input->finish();
    }
    for (const char* key : {"supported_modules", "input_config", "devices"}) {
      YAML::Node n = g.raw(key);
      if (!n) continue;
      global.extra[key] = yaml_to_json(n);
      global.extra_where[key] = where(n);
    }
  }

  void read_suite(YamlMap& suite, SuiteConfig& config) {
    config.labels = strings(suite, "labels");
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
  bool strict_;
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
  std::vector<std::string> unknown_;
};

}  // namespace

SuiteConfigResult parse_suite_config(const YamlDoc& doc, bool strict) {
  return SuiteReader(doc, strict).read();
}

SuiteConfigResult load_suite_config(const std::string& path, bool strict) {
  try {
    YamlDoc doc = load_yaml_file(path);
    return parse_suite_config(doc, strict);
  } catch (const Error& e) {
    SuiteConfigResult r;
    r.config.path = path;
    r.errors.push_back(e.what());
    return r;
  }
}

}  // namespace ootci
