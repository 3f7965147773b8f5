#include "plan/plan_resolve.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/sha256.h"
#include "plan/path_glob.h"
#include "plan/plan_json.h"
#include "plan/python_versions.h"
#include "plan/suite_config.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

bool is_regular_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string canonical(const std::string& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? p : c.string();
}

// Existing regular files for a pattern (with or without glob characters), canonical, sorted.
std::vector<std::string> matching_files(const std::string& pattern) {
  std::set<std::string> files;
  for (const auto& p : expand_glob(pattern))
    if (is_regular_file(p)) files.insert(canonical(p));
  return {files.begin(), files.end()};
}

// One upstream file as the configs that list it describe it, merged (rules 3 and 4).
struct MergedFile {
  std::vector<std::string> declared_as;
  std::set<size_t> configs;
  std::set<std::string> labels;
  std::optional<TestMode> unlisted_test_mode;
  std::string unlisted_where;
  std::vector<Rule> rules;
  std::set<std::string> rule_bodies;  // for dropping identical rules
  std::optional<std::vector<DtypeEntry>> supported_dtypes;
  std::optional<std::vector<OpEntry>> supported_ops;
  nlohmann::json extra = nlohmann::json::object();
  std::map<std::string, std::string> extra_where;
};

class PlanResolver {
 public:
  PlanResolver(const BackendConfig& backend, bool strict, const std::string& torch_version)
      : backend_(backend), strict_(strict), chosen_(choose_test_configs(backend, torch_version)) {}

  PlanResult resolve() {
    if (chosen_.error) errors_.push_back(*chosen_.error);
    read_configs();
    if (errors_.empty()) {
      for (size_t ci = 0; ci < configs_.size(); ++ci) merge_config(ci);
    }
    PlanResult r;
    r.warnings = std::move(warnings_);
    if (errors_.empty()) r.plan = plan_json(r);
    r.errors = std::move(errors_);
    return r;
  }

 private:
  // Rule 1: every config of test_configs, globs sorted, each file once.
  void read_configs() {
    std::set<std::string> seen;
    for (size_t i = 0; i < chosen_.patterns.size(); ++i) {
      const std::string& pattern = chosen_.patterns[i];
      auto files = matching_files(pattern);
      if (files.empty())
        errors_.push_back(
            fmt::format("{}: test_configs{}[{}]: no file matches '{}'", chosen_.where[i],
                        chosen_.set.empty() ? "" : ".by_torch." + chosen_.set, i, pattern));
      for (const auto& f : files) {
        if (!seen.insert(f).second) continue;
        SuiteConfigResult parsed = load_suite_config(f, strict_);
        errors_.insert(errors_.end(), parsed.errors.begin(), parsed.errors.end());
        warnings_.insert(warnings_.end(), parsed.warnings.begin(), parsed.warnings.end());
        configs_.push_back(std::move(parsed.config));
      }
    }
  }

  // Rule 2: tokens replaced, globs matched, paths canonical.
  std::vector<std::string> expand_file_path(const SuiteConfig& config, const FileEntry& file) {
    std::string path;
    size_t i = 0;
    const std::string& text = file.path;
    while (i < text.size()) {
      size_t start = text.find("${", i);
      if (start == std::string::npos) {
        path += text.substr(i);
        break;
      }
      path += text.substr(i, start - i);
      size_t end = text.find('}', start);
      std::string token = text.substr(start, end == std::string::npos ? end : end - start + 1);
      if (token == "${TORCH_ROOT}") {
        path += backend_.torch_root;
      } else if (token == "${TORCH_DEVICE_ROOT}") {
        path += backend_.device_root;
      } else {
        errors_.push_back(fmt::format(
            "{}: {}.path: unknown token '{}' (expected ${{TORCH_ROOT}} or ${{TORCH_DEVICE_ROOT}})",
            file.path_where, file.yaml_path, token));
        return {};
      }
      i = start + token.size();
    }
    // A path without a token is relative to the config's own folder.
    path = (fs::path(config.path).parent_path() / path).lexically_normal().string();
    auto files = matching_files(path);
    if (files.empty())
      errors_.push_back(
          fmt::format("{}: {}.path: no file matches '{}'", file.path_where, file.yaml_path, path));
    return files;
  }

  void merge_config(size_t ci) {
    const SuiteConfig& config = configs_[ci];
    for (const FileEntry& entry : config.files) {
      for (const std::string& path : expand_file_path(config, entry)) {
        MergedFile& merged = files_[path];
        bool first_from_config = merged.configs.insert(ci).second;
        if (std::find(merged.declared_as.begin(), merged.declared_as.end(), entry.path) ==
            merged.declared_as.end())
          merged.declared_as.push_back(entry.path);
        merged.labels.insert(config.labels.begin(), config.labels.end());
        merged.labels.insert(entry.labels.begin(), entry.labels.end());
        merge_unlisted_mode(path, entry, merged);
        for (const Rule& rule : entry.rules) {
          if (merged.rule_bodies.insert(rule_body_json(rule).dump()).second)
            merged.rules.push_back(rule);
        }
        // Rule 4: global is merged per file, once per config listing it.
        if (first_from_config) merge_global(path, config, merged);
      }
    }
  }

  std::string shown(const std::string& path) const {
    return plan_relpath(path, backend_.torch_root, backend_.device_root);
  }

  void merge_unlisted_mode(const std::string& path, const FileEntry& entry, MergedFile& merged) {
    if (!entry.unlisted_test_mode) return;
    if (!merged.unlisted_test_mode) {
      merged.unlisted_test_mode = entry.unlisted_test_mode;
      merged.unlisted_where = entry.unlisted_where;
    } else if (*merged.unlisted_test_mode != *entry.unlisted_test_mode) {
      // Spyre warns and keeps the first; ootci does the same rather than refuse real files.
      warnings_.push_back(fmt::format(
          "{}: {}.unlisted_test_mode: conflicting unlisted_test_mode for {}: {} here but {} at {}; "
          "the first one applies",
          entry.unlisted_where, entry.yaml_path, shown(path), to_string(*entry.unlisted_test_mode),
          to_string(*merged.unlisted_test_mode), merged.unlisted_where));
    }
  }

  // Adds `add` to `into` by name. A setting given in only one declaration applies; of two different
  // precisions the first applies (a warning); force_xfail from any declaration holds.
  void merge_dtypes(const std::string& path, const std::string& what, std::vector<DtypeEntry>& into,
                    const std::vector<DtypeEntry>& add) {
    for (const DtypeEntry& d : add) {
      auto it = std::find_if(into.begin(), into.end(),
                             [&](const DtypeEntry& e) { return e.name == d.name; });
      if (it == into.end()) {
        into.push_back(d);
        continue;
      }
      if (d.precision && it->precision && it->precision != d.precision)
        warnings_.push_back(fmt::format(
            "{}: {}: conflicting precision for dtype '{}'{} in {}: {} here but {} at {}; the first "
            "one applies",
            d.where, d.yaml_path, d.name, what, shown(path), precision_json(d.precision).dump(),
            precision_json(it->precision).dump(), it->where));
      if (!it->precision) it->precision = d.precision;
      it->force_xfail = it->force_xfail || d.force_xfail;
    }
  }

  void merge_ops(const std::string& path, std::vector<OpEntry>& into,
                 const std::vector<OpEntry>& add) {
    for (const OpEntry& op : add) {
      auto it = std::find_if(into.begin(), into.end(),
                             [&](const OpEntry& e) { return e.name == op.name; });
      if (it == into.end()) {
        into.push_back(op);
        continue;
      }
      it->force_xfail = it->force_xfail || op.force_xfail;
      // As for the global lists: no dtypes only if no declaration of the op lists any.
      if (!op.dtypes) continue;
      if (!it->dtypes) it->dtypes.emplace();
      merge_dtypes(path, fmt::format(" of op '{}'", op.name), *it->dtypes, *op.dtypes);
    }
  }

  void merge_global(const std::string& path, const SuiteConfig& config, MergedFile& merged) {
    const GlobalConfig& g = config.global;
    // An empty supported_dtypes filters nothing in Spyre: it reads as absent.
    if (g.supported_dtypes && !g.supported_dtypes->empty()) {
      if (!merged.supported_dtypes) merged.supported_dtypes.emplace();
      merge_dtypes(path, "", *merged.supported_dtypes, *g.supported_dtypes);
    }
    if (g.supported_ops) {
      if (!merged.supported_ops) merged.supported_ops.emplace();
      merge_ops(path, *merged.supported_ops, *g.supported_ops);
    }
    for (const auto& [key, value] : g.extra.items()) {
      const std::string& where = g.extra_where.at(key);
      if (!merged.extra.contains(key)) {
        merged.extra[key] = value;
        merged.extra_where[key] = where;
      } else if (merged.extra[key].is_array() && value.is_array()) {
        for (const auto& item : value)
          if (std::find(merged.extra[key].begin(), merged.extra[key].end(), item) ==
              merged.extra[key].end())
            merged.extra[key].push_back(item);
      } else if (merged.extra[key] != value) {
        warnings_.push_back(fmt::format(
            "{}: test_suite_config.global.{}: conflicting global.{} for {}: differs from {}; the "
            "first one applies",
            where, key, key, shown(path), merged.extra_where[key]));
      }
    }
  }

  nlohmann::json plan_json(PlanResult& r) const {
    nlohmann::json configs = nlohmann::json::array();
    for (const auto& c : configs_)
      configs.push_back({{"path", c.path}, {"sha256", file_sha256_hex(c.path)}});

    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, f] : files_) {  // std::map: sorted by path
      nlohmann::json rules = nlohmann::json::array();
      for (const auto& rule : f.rules) rules.push_back(rule_json(rule));
      nlohmann::json dtypes = nullptr, ops = nullptr;
      if (f.supported_dtypes) {
        dtypes = nlohmann::json::array();
        for (const auto& d : *f.supported_dtypes) dtypes.push_back(dtype_json(d));
      }
      if (f.supported_ops) {
        ops = nlohmann::json::array();
        for (const auto& op : *f.supported_ops) ops.push_back(op_json(op));
      }
      files.push_back({
          {"path", path},
          {"relpath", shown(path)},
          {"sha256", file_sha256_hex(path)},
          {"declared_as", f.declared_as},
          {"configs", f.configs},
          {"labels", f.labels},
          // Spyre's default for a file entry without one.
          {"unlisted_test_mode", to_string(f.unlisted_test_mode.value_or(TestMode::kXfail))},
          {"supported_dtypes", dtypes},
          {"supported_ops", ops},
          {"supported_modules", f.extra.value("supported_modules", nlohmann::json(nullptr))},
          {"rules", rules},
          {"extra", f.extra},
      });
      r.rule_count += f.rules.size();
    }
    r.file_count = files_.size();

    const BackendConfig& b = backend_;
    nlohmann::json plan = {
        {"schema", kPlanSchema},
        {"version", kPlanVersion},
        {"backend",
         {{"name", b.name},
          {"device_type", b.device_type},
          {"python", b.python},
          {"modules", b.modules},
          {"pythonpath", b.pythonpath},
          {"env", b.env}}},
        {"upstream", {{"torch_root", b.torch_root}, {"device_root", b.device_root}}},
        {"configs", configs},
        {"files", files},
    };
    if (!chosen_.set.empty()) plan["torch_config_set"] = chosen_.set;
    return plan;
  }

  const BackendConfig& backend_;
  bool strict_;
  ChosenConfigs chosen_;
  std::vector<SuiteConfig> configs_;
  std::map<std::string, MergedFile> files_;
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
};

}  // namespace

PlanResult resolve_plan(const BackendConfig& backend, bool strict) {
  // Only a backend with test_configs.by_torch asks its Python which torch it has.
  std::string torch = backend.test_config_sets.empty() ? "" : probe_python_versions(backend).torch;
  return resolve_plan_for_torch(backend, torch, strict);
}

PlanResult resolve_plan_for_torch(const BackendConfig& backend, const std::string& torch_version,
                                  bool strict) {
  return PlanResolver(backend, strict, torch_version).resolve();
}

std::string plan_relpath(const std::string& path, const std::string& torch_root,
                         const std::string& device_root) {
  for (const std::string& root : {torch_root, device_root}) {
    if (root.empty()) continue;
    std::string prefix = root.back() == '/' ? root : root + "/";
    if (path.rfind(prefix, 0) == 0) return path.substr(prefix.size());
  }
  return path;
}

std::string plan_text(const nlohmann::json& plan) {
  return plan.dump(2) + "\n";
}

void write_plan(const nlohmann::json& plan, const std::string& path) {
  write_file_atomically(path, plan_text(plan));
}

std::string plan_config_hash(const nlohmann::json& plan) {
  nlohmann::json canonical = nlohmann::json::array();
  for (const auto& f : plan["files"]) {
    nlohmann::json rules = nlohmann::json::array();
    for (auto r : f["rules"]) {
      r.erase("source");
      rules.push_back(r);
    }
    canonical.push_back({{"relpath", f["relpath"]},
                         {"unlisted_test_mode", f["unlisted_test_mode"]},
                         {"supported_dtypes", f["supported_dtypes"]},
                         {"supported_ops", f["supported_ops"]},
                         {"rules", rules}});
  }
  canonical.push_back(plan["backend"]["device_type"]);
  return sha256_hex(canonical.dump());
}

}  // namespace ootci
