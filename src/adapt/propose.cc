#include "adapt/propose.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>

#include "adapt/agent_hook.h"
#include "adapt/bucket_changes.h"
#include "adapt/config_writer.h"
#include "adapt/tolerance.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/text.h"
#include "base/yaml_doc.h"
#include "discover/variant_evidence.h"
#include "evidence/code_evidence.h"
#include "evidence/evidence_store.h"
#include "plan/plan_resolve.h"
#include "plan/suite_config.h"

namespace ootci {

namespace fs = std::filesystem;

namespace {

bool matches_any(const std::vector<std::string>& globs, const std::string& relpath) {
  std::string name = fs::path(relpath).filename().string();
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return fnmatch(g.c_str(), relpath.c_str(), 0) == 0 || fnmatch(g.c_str(), name.c_str(), 0) == 0;
  });
}

std::string entry_label(const NameDecision& d) {
  if (!d.restricted()) return to_string(d.mode);
  return fmt::format("{} [{}]", to_string(d.mode), fmt::join(d.dtypes_include, ", "));
}

// The mode every variant runs in under the written config.
struct VariantCounts {
  std::map<TestMode, size_t> by_mode;
  size_t human = 0;
  std::map<std::string, std::string> by_test_id;  // mode name, or "human"
};

VariantCounts count_variants(const FileEvidence& f, const std::vector<NameDecision>& decisions,
                             const std::vector<Rule>& human_rules,
                             const std::optional<std::set<std::string>>& global_dtypes) {
  VariantCounts c;
  DecisionIndex index(decisions, global_dtypes);
  for (const BaseEvidence& b : f.bases) {
    bool human = human_owns(human_rules, b.base);
    for (const VariantEvidence& v : b.variants) {
      if (human) {
        ++c.human;
        c.by_test_id[v.test_id] = "human";
        continue;
      }
      TestMode mode = index.mode(b.base, v).value_or(TestMode::kSkip);
      ++c.by_mode[mode];
      c.by_test_id[v.test_id] = to_string(mode);
    }
  }
  return c;
}

// global.supported_dtypes as Spyre reads it: an empty list filters nothing.

// Spyre's CI runs a config only when one of its labels is selected; ootci keeps an existing
// file's labels, so say when they left the vocabulary.
void warn_about_labels(const ExistingConfig& existing, const std::vector<std::string>& labels,
                       std::ostream& err) {
  for (const auto& l : existing.labels)
    if (std::find(labels.begin(), labels.end(), l) != labels.end()) return;
  err << fmt::format(
      "warning: {}: its labels [{}] name none of select.labels [{}], so a CI selecting those "
      "never runs it; ootci keeps a file's labels: edit them there\n",
      existing.path, fmt::join(existing.labels, ", "), fmt::join(labels, ", "));
}

void print_changes(const ConfigDiff& diff, std::ostream& out) {
  // Added names by entry, so a first proposal prints one line per entry, not per test.
  std::vector<std::vector<const NameDecision*>> added;
  for (const auto& c : diff.added) {
    const NameDecision& d = *c.after;
    auto it = std::find_if(added.begin(), added.end(),
                           [&](const auto& g) { return g[0]->same_settings(d); });
    if (it == added.end())
      added.push_back({&d});
    else
      it->push_back(&d);
  }
  for (const auto& g : added)
    out << fmt::format("  + {} [{}]: {}\n", entry_label(*g[0]), plural(g.size(), "name"),
                       g[0]->reason);
  for (const auto& c : diff.changed)
    out << (c.before->mode == c.after->mode
                ? fmt::format("  ~ {}: still {}, now: {}\n", c.name, to_string(c.after->mode),
                              c.after->reason)
                : fmt::format("  ~ {}: {} -> {}: {}\n", c.name, to_string(c.before->mode),
                              to_string(c.after->mode), c.after->reason));
  for (const auto& c : diff.removed)
    out << fmt::format("  - {} (was {})\n", c.name, to_string(c.before->mode));
}

struct FileOutcome {
  std::string status;                        // created | updated | unchanged
  std::map<std::string, std::string> modes;  // by test id, as VariantCounts
  std::vector<BucketChange> changes;         // name by name, for the device page
};

std::vector<BucketChange> bucket_changes(const std::string& relpath, const ConfigDiff& diff) {
  std::vector<BucketChange> out;
  for (const auto& c : diff.added)
    out.push_back({relpath, c.name, "", to_string(c.after->mode), c.after->reason});
  for (const auto& c : diff.changed)
    out.push_back(
        {relpath, c.name, to_string(c.before->mode), to_string(c.after->mode), c.after->reason});
  for (const auto& c : diff.removed)
    out.push_back({relpath, c.name, to_string(c.before->mode), "", ""});
  return out;
}

FileOutcome propose_file(const ProposeRequest& req, const FileEvidence& f, const Capabilities& caps,
                         std::ostream& out, std::ostream& err) {
  std::vector<std::vector<Bucket>> buckets;
  TolerancePolicy tolerance = tolerance_policy(req.backend.select.tolerance);
  for (const BaseEvidence& b : f.bases) buckets.push_back(bucket_variants(b, caps, 2, tolerance));

  std::vector<AgentVerdict> verdicts;
  const SelectSettings& agent = req.backend.select;
  if (req.use_agent && !agent.agent_command.empty()) {
    std::string upstream = read_file_or_empty(req.backend.torch_root + "/" + f.relpath);
    try {
      nlohmann::json answer = run_agent(
          agent.agent_command, agent_bundle(f, buckets, upstream, caps), agent.agent_timeout_s);
      verdicts = apply_agent_answer(answer, f, buckets);
    } catch (const Error& e) {
      err << fmt::format("warning: {}: agent: {}; the deterministic buckets stand\n", f.relpath,
                         e.what());
    }
  }

  std::optional<std::set<std::string>> global = global_dtypes(caps);
  std::vector<NameDecision> decisions = represent_file(f, buckets, global);

  std::string path = (fs::path(req.out_dir) / config_file_name(f.relpath)).string();
  std::optional<ExistingConfig> existing;
  if (fs::exists(path)) existing = read_existing_config(path);
  if (existing) warn_about_labels(*existing, req.backend.select.labels, err);
  std::vector<Rule> human =
      existing && !req.overwrite_human ? existing->human_rules : std::vector<Rule>{};
  std::vector<NameDecision> final_names = without_human(decisions, human);
  std::string text = render_config(f.relpath, req.backend.select.labels, final_names,
                                   existing ? &*existing : nullptr, req.overwrite_human);
  validate_proposed_config(path, text);
  std::string before = existing ? read_file_or_empty(path) : "";
  FileOutcome outcome;
  outcome.status = !existing ? "created" : before == text ? "unchanged" : "updated";
  if (!req.dry_run && (!existing || before != text)) write_file_atomically(path, text);

  size_t entries_before =
      existing ? static_cast<size_t>(std::count_if(existing->layout.entries.begin(),
                                                   existing->layout.entries.end(),
                                                   [](const auto& e) { return e.generated; }))
               : 0;
  ConfigDiff diff =
      diff_decisions(existing ? existing->generated : std::vector<NameDecision>{}, final_names);
  VariantCounts counts = count_variants(f, final_names, human, global);
  size_t variants = 0;
  for (const auto& b : f.bases) variants += b.variants.size();

  out << fmt::format("{} -> {}: {}{}\n", f.relpath, path, outcome.status,
                     req.dry_run && outcome.status != "unchanged" ? " (dry run, not written)" : "");
  std::string per_mode;
  for (TestMode m :
       {TestMode::kMandatorySuccess, TestMode::kXfail, TestMode::kXfailStrict, TestMode::kSkip})
    per_mode +=
        fmt::format("{}{} {}", per_mode.empty() ? "" : ", ", counts.by_mode[m], to_string(m));
  out << fmt::format("  {} from {}: {}{}\n", plural(variants, "variant"),
                     plural(f.run_ids.size(), "run"), per_mode,
                     counts.human ? fmt::format(", {} under human entries", counts.human) : "");
  out << fmt::format("  entries: {} (was {}); names: {} added, {} changed, {} removed{}\n",
                     entry_count(final_names), entries_before, diff.added.size(),
                     diff.changed.size(), diff.removed.size(),
                     existing && existing->human_entries
                         ? fmt::format("; {} human {} {}", existing->human_entries,
                                       existing->human_entries == 1 ? "entry" : "entries",
                                       req.overwrite_human ? "overwritten" : "kept")
                         : "");
  for (const AgentVerdict& v : verdicts)
    out << (v.accepted ? fmt::format("  agent: accepted {} {} ({})\n", v.where, v.summary,
                                     plural(v.variants, "variant"))
                       : fmt::format("  agent: rejected {} {}: {}\n", v.where, v.summary, v.why));
  print_changes(diff, out);
  outcome.modes = std::move(counts.by_test_id);
  outcome.changes = bucket_changes(f.relpath, diff);
  return outcome;
}

}  // namespace

std::unique_ptr<EvidenceStore> open_existing_evidence(const std::string& db) {
  // Selection reads; an absent database is a mistake, not a new empty file.
  if (!fs::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  return EvidenceStore::open(db);
}

void validate_proposed_config(const std::string& path, const std::string& text) {
  SuiteConfigResult r = parse_suite_config(load_yaml_text(path, text));
  if (!r.ok())
    throw Error(fmt::format("the config proposed for {} does not validate: {}", path, r.errors[0]));
}

std::optional<std::set<std::string>> global_dtypes(const Capabilities& caps) {
  if (!caps.supported_dtypes || caps.supported_dtypes->empty()) return std::nullopt;
  return caps.supported_dtypes;
}

const Capabilities& FileCapabilities::of(const std::string& relpath) const {
  auto it = by_file.find(relpath);
  return it == by_file.end() ? code : it->second;
}

FileCapabilities load_capabilities(const BackendConfig& backend, const CapabilitySources& sources,
                                   std::ostream& err) {
  FileCapabilities c;
  if (!sources.sources_root.empty()) {
    if (fs::is_directory(sources.sources_root)) {
      CodeEvidence code = scan_backend_sources(sources.sources_root, sources.dispatch_key);
      c.code.supported_ops = code.supported_ops;
      c.code.has_fallback = code.has_fallback;
    } else {
      err << fmt::format("warning: no backend sources at {}: no code evidence\n",
                         sources.sources_root);
    }
  }
  PlanResult plan = resolve_plan(backend);
  if (!plan.ok()) {
    err << fmt::format(
        "warning: the test-suite configs of {} do not resolve ({}); proposing without their "
        "global lists\n",
        backend.path, plan.errors[0]);
    return c;
  }
  for (const auto& f : plan.plan["files"]) {
    Capabilities k = c.code;
    auto names = [](const nlohmann::json& list) {
      std::set<std::string> out;
      for (const auto& e : list) out.insert(e.at("name").get<std::string>());
      return out;
    };
    if (f["supported_dtypes"].is_array()) k.supported_dtypes = names(f["supported_dtypes"]);
    if (f["supported_ops"].is_array()) k.declared_ops = names(f["supported_ops"]);
    c.by_file[f["relpath"].get<std::string>()] = std::move(k);
  }
  return c;
}

int propose(const ProposeRequest& req, std::ostream& out, std::ostream& err) {
  auto store = open_existing_evidence(req.evidence_path);
  std::vector<DiscoveredFile> discovered = store->latest_discoveries();
  if (discovered.empty())
    throw Error(fmt::format("no discovered files in {}: run `ootci discover --config {}` first",
                            req.evidence_path, req.backend.path));
  if (!req.file_globs.empty()) {
    std::vector<DiscoveredFile> kept;
    for (const auto& d : discovered)
      if (matches_any(req.file_globs, d.relpath)) kept.push_back(d);
    if (kept.empty()) {
      std::string known;
      for (const auto& d : discovered) known += (known.empty() ? "" : ", ") + d.relpath;
      throw Error(fmt::format("--files matches none of the discovered files ({})", known));
    }
    discovered = std::move(kept);
  }
  FileCapabilities caps = load_capabilities(req.backend, req.sources, err);
  std::vector<FileEvidence> files = load_file_evidence(*store, discovered, req.later_runs);

  int code = 0;
  std::map<std::string, size_t> statuses;
  nlohmann::json variants = nlohmann::json::object();
  std::vector<BucketChange> changes;
  for (const FileEvidence& f : files) {
    try {
      FileOutcome outcome = propose_file(req, f, caps.of(f.relpath), out, err);
      ++statuses[outcome.status];
      changes.insert(changes.end(), outcome.changes.begin(), outcome.changes.end());
      for (const auto& [test_id, mode] : outcome.modes) variants[test_id] = mode;
    } catch (const Error& e) {
      err << fmt::format("error: {}: {}\n", f.relpath, e.what());
      code = 1;
    }
  }
  if (!req.variants_path.empty())
    write_file_atomically(req.variants_path,
                          nlohmann::json{{"version", 1}, {"variants", variants}}.dump(2) + "\n");
  record_bucket_changes(req.backend, "propose", !req.dry_run, changes, err);
  out << fmt::format("{}: {} created, {} updated, {} unchanged{}\n", plural(files.size(), "file"),
                     statuses["created"], statuses["updated"], statuses["unchanged"],
                     req.dry_run ? " (dry run: nothing written)" : "");
  return code;
}

}  // namespace ootci
