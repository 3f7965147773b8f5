#include "plan/backend_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "base/config_path.h"
#include "base/yaml_doc.h"
#include "plan/python_versions.h"
#include "plan/release_pin.h"

namespace fs = std::filesystem;

namespace ootci {

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

namespace {

std::string without_trailing_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Symlinks resolved as far as the path exists, so plan paths compare with canonical file paths.
std::string canonical_dir(const std::string& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return without_trailing_slash(ec ? p : c.string());
}

// "a, b or c", for error messages that list the accepted values.
std::string alternatives(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  return out;
}

const std::vector<std::string> kPullRequestActions = {"opened", "synchronize",     "reopened",
                                                      "closed", "labeled",         "unlabeled",
                                                      "edited", "ready_for_review"};

class BackendReader {
 public:
  BackendReader(const YamlDoc& doc, std::string dir, EnvLookup environment)
      : doc_(doc), dir_(std::move(dir)), env_(std::move(environment)) {}

  BackendConfigResult read(const std::string& path) {
    BackendConfig c;
    c.path = path;
    c.dir = dir_;
    YamlMap root(doc_, doc_.root, "", &errors_);
    if (!present(root, "backend")) {
      root.fail(doc_.root, "", "missing required key 'backend'");
    } else if (auto b = root.map("backend")) {
      read_backend(*b, c);
      b->finish();
    }
    read_upstream(root, c);
    if (!present(root, "test_configs"))
      root.fail(doc_.root, "", "missing required key 'test_configs'");
    else
      read_test_configs(root, c);
    c.workspace = path_in_config_dir(dir_, root.str("workspace").value_or(".ootci"));
    if (auto run = root.map("run")) {
      read_run(*run, c.run);
      if (c.run.devices > 0 && c.device_env.empty())
        run->fail(run->raw("devices"), run->child_path("devices"),
                  "a device pool needs backend.device_env, the variable that tells a test "
                  "process its devices");
      run->finish();
    }
    if (auto gate = root.map("gate")) {
      read_gate(*gate, c.gate);
      gate->finish();
    }
    if (auto report = root.map("report")) {
      read_report(*report, c.report);
      report->finish();
    }
    if (auto select = root.map("select")) {
      read_select(*select, c.select);
      select->finish();
    }
    c.attribute.backend_repo = c.device_root;
    c.attribute.tests_repo = c.torch_root;
    if (auto attribute = root.map("attribute")) {
      read_attribute(*attribute, c.attribute);
      attribute->finish();
    }
    root.finish();

    BackendConfigResult r;
    r.errors = std::move(errors_);
    if (r.errors.empty()) r.config = std::move(c);
    return r;
  }

 private:
  static bool present(YamlMap& m, const std::string& key) {
    YAML::Node n = m.raw(key);
    return n && !n.IsNull();
  }

  static std::string required_string(YamlMap& m, const std::string& key) {
    if (!present(m, key)) {
      m.fail(m.node(), m.path(), fmt::format("missing required key '{}'", key));
      return "";
    }
    return m.str(key).value_or("");
  }

  void read_backend(YamlMap& b, BackendConfig& c) {
    c.name = required_string(b, "name");
    c.device_type = required_string(b, "device_type");
    if (auto v = b.str("python")) c.python = *v;
    read_root(b, c);
    if (auto v = b.str_list("modules")) c.modules = *v;
    if (auto v = b.str_list("pythonpath")) {
      YAML::Node node = b.raw("pythonpath");
      for (size_t i = 0; i < v->size(); ++i) {
        std::string where = fmt::format("{}[{}]", b.child_path("pythonpath"), i);
        if (auto p = expand_text(b, node[i], where, (*v)[i]))
          c.pythonpath.push_back(path_in_config_dir(dir_, *p));
      }
    }
    if (auto env = b.map("env")) {
      for (const auto& key : env->keys()) c.env[key] = env->str(key).value_or("");
      env->finish();
    }
    c.fork_safe = b.boolean("fork_safe").value_or(c.fork_safe);
    if (auto v = b.str("device_env")) c.device_env = *v;
  }

  // test_configs: a list of config paths (globs), or {by_torch: {"MAJOR.MINOR": [paths]}}.
  void read_test_configs(YamlMap& root, BackendConfig& c) {
    YAML::Node node = root.raw("test_configs");
    if (node.IsSequence()) {
      read_config_paths(root, node, "test_configs", c.test_configs, c.test_config_where);
      return;
    }
    if (!node.IsMap() || node.size() != 1 || !node["by_torch"] || !node["by_torch"].IsMap()) {
      root.fail(node, "test_configs", "expected a list, or a mapping with one key, by_torch");
      return;
    }
    YAML::Node sets = node["by_torch"];
    c.test_config_sets_where = yaml_where(doc_, sets);
    for (const auto& kv : sets) {
      std::string key = kv.first.Scalar(), path = "test_configs.by_torch." + key;
      if (torch_minor(key) != key) {
        root.fail(kv.first, path, "expected a torch version MAJOR.MINOR, such as 2.6");
        continue;
      }
      if (!kv.second.IsSequence()) {
        root.fail(kv.second, path, "expected a list of config paths");
        continue;
      }
      auto& set = c.test_config_sets[key];
      read_config_paths(root, kv.second, path, set.patterns, set.where);
    }
  }

  void read_config_paths(YamlMap& m, const YAML::Node& list, const std::string& path,
                         std::vector<std::string>& into, std::vector<std::string>& where) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].IsScalar()) {
        m.fail(list[i], fmt::format("{}[{}]", path, i), "expected a string");
        continue;
      }
      into.push_back(path_in_config_dir(dir_, list[i].Scalar()));
      where.push_back(yaml_where(doc_, list[i]));
    }
  }

  // backend.root and backend.root_binds. A root that is not there, or that lacks backend.python,
  // is an error here rather than a crash of every test process later.
  void read_root(YamlMap& b, BackendConfig& c) {
    if (auto root = expand(b, "root")) {
      c.root = fs::path(path_in_config_dir(dir_, *root)).lexically_normal().string();
      std::error_code ec;
      if (!fs::is_directory(c.root, ec))
        b.fail(b.raw("root"), b.child_path("root"),
               fmt::format("the root folder {} does not exist", c.root));
      else if (c.python.empty() || c.python[0] != '/')
        b.fail(b.raw("root"), b.child_path("root"),
               "with a root, backend.python must be an absolute path inside it");
      else if (!fs::exists(c.root + c.python, ec))
        b.fail(b.raw("root"), b.child_path("root"),
               fmt::format("backend.python {} is not in the root {} (no {}{})", c.python, c.root,
                           c.root, c.python));
    }
    if (auto binds = b.str_list("root_binds")) {
      if (c.root.empty() && !binds->empty())
        b.fail(b.raw("root_binds"), b.child_path("root_binds"), "root_binds needs backend.root");
      for (const auto& p : *binds) c.root_binds.push_back(path_in_config_dir(dir_, p));
    }
  }

  static void read_run(YamlMap& m, RunSettings& r) {
    if (auto v = one_of(m, "isolation", {"fork", "spawn"}, "isolation")) r.isolation = *v;
    r.devices = static_cast<int>(m.integer("devices", 1, 1024).value_or(r.devices));
    r.workers = static_cast<int>(m.integer("workers", 1, 256).value_or(r.workers));
    r.reruns = static_cast<int>(m.integer("reruns", 0, 10).value_or(r.reruns));
    r.stall_timeout_s =
        static_cast<int>(m.integer("stall_timeout_s", 1, 86400).value_or(r.stall_timeout_s));
    r.test_timeout_s =
        static_cast<int>(m.integer("test_timeout_s", 1, 86400).value_or(r.test_timeout_s));
    r.test_timeout_floor_s = static_cast<int>(
        m.integer("test_timeout_floor_s", 1, 86400).value_or(r.test_timeout_floor_s));
    r.discover_test_timeout_s = static_cast<int>(
        m.integer("discover_test_timeout_s", 1, 86400).value_or(r.discover_test_timeout_s));
    r.dead_helper_grace_s = static_cast<int>(
        m.integer("dead_helper_grace_s", 0, 86400).value_or(r.dead_helper_grace_s));
    if (auto f = m.number("test_timeout_factor")) {
      if (!(*f >= 1) || !std::isfinite(*f))
        m.fail(m.raw("test_timeout_factor"), m.child_path("test_timeout_factor"),
               "expected a number of at least 1");
      else
        r.test_timeout_factor = *f;
    }
    if (auto v = m.str_list("pytest_args")) r.pytest_args = *v;
    if (auto v = m.str_list("labels")) r.labels = *v;
  }

  // A string that must be one of `allowed`.
  static std::optional<std::string> one_of(YamlMap& m, const std::string& key,
                                           const std::vector<std::string>& allowed,
                                           const std::string& what) {
    auto v = m.str(key);
    if (!v) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), *v) != allowed.end()) return v;
    m.fail(m.raw(key), m.child_path(key),
           fmt::format("unknown {} '{}' (expected {})", what, *v, alternatives(allowed)));
    return std::nullopt;
  }

  // gate: which dispatches build (docs/dispatch.md). Nested as the webhook is: pull_request,
  // push, nightly.
  static void read_gate(YamlMap& g, GatePolicy& p) {
    if (auto pr = g.map("pull_request")) {
      read_gate_pull_request(*pr, p);
      pr->finish();
    }
    if (auto push = g.map("push")) {
      if (auto v = push->str_list("refs")) p.push_refs = *v;
      push->finish();
    }
    if (auto v = g.str_list("base_head_command")) p.base_head_command = *v;
    if (auto nightly = g.map("nightly")) {
      read_gate_nightly(*nightly, p);
      nightly->finish();
    }
  }

  static void read_gate_pull_request(YamlMap& m, GatePolicy& p) {
    if (auto actions = m.str_list("actions")) {
      YAML::Node list = m.raw("actions");
      bool ok = true;
      for (size_t i = 0; i < actions->size(); ++i) {
        const std::string& a = (*actions)[i];
        if (std::find(kPullRequestActions.begin(), kPullRequestActions.end(), a) !=
            kPullRequestActions.end())
          continue;
        m.fail(
            list[i], fmt::format("{}[{}]", m.child_path("actions"), i),
            fmt::format("unknown action '{}' (expected {})", a, alternatives(kPullRequestActions)));
        ok = false;
      }
      if (ok) p.pr_actions = *actions;
    }
    if (auto v = m.boolean("require_merged")) p.require_merged = *v;
    if (auto v = m.str("merged_label")) p.merged_label = *v;
    if (auto v = m.str_list("base_branches")) p.base_branches = *v;
    if (auto v = m.str("release_pin")) {
      if (pinned_minor(*v))
        p.release_pin = *v;
      else
        m.fail(m.raw("release_pin"), m.child_path("release_pin"),
               fmt::format("no MAJOR.MINOR version in '{}' (for example torch~=2.14.0)", *v));
    }
    if (auto v = m.str_list("labels")) p.labels = *v;
    if (auto v = one_of(m, "landed_sha", {"head", "merge_commit", "base_head"}, "landed_sha"))
      p.landed_sha = *v;
  }

  static void read_gate_nightly(YamlMap& m, GatePolicy& p) {
    if (auto v = m.str_list("command")) p.nightly_command = *v;
    auto pattern = m.str("sha_pattern");
    if (!pattern) return;
    std::string problem;
    try {
      if (std::regex(*pattern).mark_count() == 0)
        problem = "the pattern needs a group, (...), around the SHA";
    } catch (const std::regex_error& e) {
      problem = fmt::format("invalid regular expression: {}", e.what());
    }
    if (problem.empty())
      p.nightly_sha_pattern = *pattern;
    else
      m.fail(m.raw("sha_pattern"), m.child_path("sha_pattern"), problem);
  }

  // report: how `ootci report` and `ootci agent` call the relay back.
  void read_report(YamlMap& m, ReportSettings& r) {
    if (auto v = m.str("callback_url")) {
      if (v->rfind("http://", 0) == 0 || v->rfind("https://", 0) == 0)
        r.callback_url = *v;
      else
        m.fail(m.raw("callback_url"), m.child_path("callback_url"),
               fmt::format("expected an http:// or https:// URL, not '{}'", *v));
    }
    if (auto v = m.str("audience")) r.audience = *v;
    if (auto v = one_of(m, "relay", {"ootci", "crcr"}, "relay")) r.relay = *v;
    r.max_attempts = static_cast<int>(m.integer("max_attempts", 1, 20).value_or(r.max_attempts));
    r.timeout_s = static_cast<int>(m.integer("timeout_s", 1, 3600).value_or(r.timeout_s));
    if (auto v = m.str("token_file")) r.token_file = path_in_config_dir(dir_, *v);
    if (auto v = m.str_list("token_command")) r.token_command = *v;
    if (auto v = m.str("workflow_name")) r.workflow_name = *v;
    if (auto v = m.str("artifact_url")) r.artifact_url = *v;
  }

  // select: the external agent `ootci select propose` may consult, and the labels it writes.
  static void read_select(YamlMap& m, SelectSettings& s) {
    if (auto v = m.str_list("agent_command")) {
      if (v->empty())
        m.fail(m.raw("agent_command"), m.child_path("agent_command"),
               "expected a non-empty list (the command and its arguments)");
      else
        s.agent_command = *v;
    }
    s.agent_timeout_s =
        static_cast<int>(m.integer("agent_timeout_s", 1, 86400).value_or(s.agent_timeout_s));
    if (auto v = m.str_list("labels")) {
      if (v->empty())
        m.fail(m.raw("labels"), m.child_path("labels"),
               "expected a non-empty list (a file without labels is never selected)");
      else
        s.labels = *v;
    }
    if (auto t = m.map("tolerance")) {
      read_tolerance(*t, s.tolerance);
      t->finish();
    }
    if (auto v = one_of(m, "pull_requests", {"staged", "full"}, "pull_requests"))
      s.pull_requests = *v;
  }

  // select.tolerance: the factor and the reference precision of each floating dtype.
  static void read_tolerance(YamlMap& m, ToleranceSettings& t) {
    if (auto f = m.number("factor")) {
      if (!(*f > 0) || !std::isfinite(*f))
        m.fail(m.raw("factor"), m.child_path("factor"), "expected a number above 0");
      else
        t.factor = *f;
    }
    std::optional<YamlMap> refs = m.map("reference");
    if (!refs) return;
    YamlMap& r = *refs;
    for (const std::string& key : r.keys()) {
      std::string path = r.child_path(key);
      YAML::Node value = r.raw(key);
      std::optional<std::string> dtype = floating_dtype(key);
      if (!dtype) {
        r.fail(value, path,
               fmt::format("unknown floating dtype '{}' (expected one of {})", key,
                           alternatives(kFloatingDtypes)));
        continue;
      }
      ToleranceSettings::Reference ref;
      if (value.IsScalar()) {
        std::optional<std::string> of = floating_dtype(value.Scalar());
        if (!of) {
          r.fail(value, path,
                 fmt::format("unknown floating dtype '{}' (expected one of {}, or {{atol, rtol}})",
                             value.Scalar(), alternatives(kFloatingDtypes)));
          continue;
        }
        ref.dtype = *of;
      } else if (value.IsMap()) {
        YamlMap numbers = *r.map(key);
        ref.atol = numbers.number("atol");
        ref.rtol = numbers.number("rtol");
        numbers.finish();
        for (auto [name, v] : {std::pair{"atol", ref.atol}, std::pair{"rtol", ref.rtol}}) {
          if (!v)
            numbers.fail(value, path, fmt::format("missing required key '{}'", name));
          else if (!(*v >= 0) || !std::isfinite(*v))
            numbers.fail(numbers.raw(name), numbers.child_path(name),
                         "expected a number of at least 0");
        }
        if (ref.rtol && *ref.rtol == 0)
          numbers.fail(numbers.raw("rtol"), numbers.child_path("rtol"),
                       "expected a number above 0 (the factor multiplies it)");
      } else {
        r.fail(value, path, "expected a dtype name or a mapping {atol, rtol}");
        continue;
      }
      t.reference[*dtype] = ref;
    }
  }

  static inline const std::vector<std::string> kFloatingDtypes = {
      "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128"};
  // The canonical name of a floating or complex dtype ("half" is float16), else nullopt.
  static std::optional<std::string> floating_dtype(const std::string& name) {
    std::string n = name == "half" ? "float16" : name;
    if (std::find(kFloatingDtypes.begin(), kFloatingDtypes.end(), n) == kFloatingDtypes.end())
      return std::nullopt;
    return n;
  }

  // attribute: the three targets (backend, tests, core) and the probe budget.
  void read_attribute(YamlMap& m, AttributeSettings& a) {
    a.reruns = static_cast<int>(m.integer("reruns", 1, 20).value_or(a.reruns));
    a.probe_reruns = static_cast<int>(m.integer("probe_reruns", 0, 5).value_or(a.probe_reruns));
    a.max_probes = static_cast<int>(m.integer("max_probes", 1, 200).value_or(a.max_probes));
    auto targets = m.map("targets");
    if (!targets) return;
    if (auto b = targets->map("backend")) {
      if (auto repo = expand(*b, "repo"))
        a.backend_repo = canonical_dir(path_in_config_dir(dir_, *repo));
      a.backend_build = expand_command(*b, "build");
      b->finish();
    }
    if (auto t = targets->map("tests")) {
      if (auto repo = expand(*t, "repo"))
        a.tests_repo = canonical_dir(path_in_config_dir(dir_, *repo));
      t->finish();
    }
    if (auto core = targets->map("core")) {
      if (auto repo = expand(*core, "repo"))
        a.core_repo = canonical_dir(path_in_config_dir(dir_, *repo));
      a.core_revision = expand_command(*core, "revision");
      a.core_prepare = expand_command(*core, "prepare");
      core->finish();
    }
    targets->finish();
  }

  // A command (a non-empty list of strings), each argument ${VAR}-expanded.
  std::vector<std::string> expand_command(YamlMap& m, const std::string& key) {
    auto list = m.str_list(key);
    if (!list) return {};
    if (list->empty()) {
      m.fail(m.raw(key), m.child_path(key),
             "expected a non-empty list (the command and its arguments)");
      return {};
    }
    YAML::Node node = m.raw(key);
    std::vector<std::string> out;
    for (size_t i = 0; i < list->size(); ++i) {
      auto arg = expand_text(m, node[i], fmt::format("{}[{}]", m.child_path(key), i), (*list)[i]);
      if (!arg) return {};
      out.push_back(*arg);
    }
    return out;
  }

  // ${VAR} from the environment; an unset variable is an error at the value's position.
  std::optional<std::string> expand(YamlMap& m, const std::string& key) {
    auto text = m.str(key);
    if (!text) return std::nullopt;
    return expand_text(m, m.raw(key), m.child_path(key), *text);
  }

  std::optional<std::string> expand_text(YamlMap& m, const YAML::Node& node,
                                         const std::string& where,
                                         const std::optional<std::string>& text) {
    std::string out;
    size_t i = 0;
    while (i < text->size()) {
      size_t start = text->find("${", i);
      if (start == std::string::npos) {
        out += text->substr(i);
        break;
      }
      out += text->substr(i, start - i);
      size_t end = text->find('}', start);
      if (end == std::string::npos) {
        m.fail(node, where, "unterminated '${'");
        return std::nullopt;
      }
      std::string var = text->substr(start + 2, end - start - 2);
      auto value = env_(var);
      if (!value) {
        m.fail(node, where, fmt::format("environment variable {} is not set", var));
        return std::nullopt;
      }
      out += *value;
      i = end + 1;
    }
    return out;
  }

  void read_upstream(YamlMap& root, BackendConfig& c) {
    std::optional<std::string> torch_root, device_root;
    bool torch_failed = false;
    if (auto u = root.map("upstream")) {
      size_t before = errors_.size();
      torch_root = expand(*u, "torch_root");
      torch_failed = errors_.size() != before;
      device_root = expand(*u, "device_root");
      u->finish();
    }
    if (!torch_root && !torch_failed) {
      torch_root = env_("TORCH_ROOT");
      if (!torch_root)
        errors_.push_back(fmt::format(
            "{}: upstream.torch_root is not set and TORCH_ROOT is not in the environment",
            doc_.name));
    }
    if (torch_root) c.torch_root = canonical_dir(path_in_config_dir(dir_, *torch_root));
    c.device_root = canonical_dir(path_in_config_dir(dir_, device_root.value_or(".")));
  }

  const YamlDoc& doc_;
  std::string dir_;
  EnvLookup env_;
  std::vector<std::string> errors_;
};

}  // namespace

BackendConfigResult load_backend_config(const std::string& path, EnvLookup environment) {
  std::optional<YamlDoc> doc;
  try {
    doc.emplace(load_yaml_file(path));
  } catch (const Error& e) {
    return BackendConfigResult{std::nullopt, {e.what()}};
  }
  std::string abs = fs::weakly_canonical(fs::absolute(path)).string();
  std::string dir = fs::path(abs).parent_path().string();
  return BackendReader(*doc, dir, std::move(environment)).read(abs);
}

}  // namespace ootci
