#include "select/propose.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>

#include "backend/evidence.h"
#include "backend/plan_resolve.h"
#include "backend/suite_config.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/yaml_doc.h"
#include "select/agent_hook.h"
#include "select/code_evidence.h"
#include "select/config_writer.h"
#include "select/rebucket.h"
#include "select/variant_evidence.h"

namespace ootci {

namespace fs = std::filesystem;

namespace {

std::unique_ptr<EvidenceStore> open_existing(const std::string& db) {
  // Selection reads; an absent database is a mistake, not a new empty file.
  if (!fs::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  return EvidenceStore::open(db);
}

bool matches_any(const std::vector<std::string>& globs, const std::string& relpath) {
  std::string name = fs::path(relpath).filename().string();
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return fnmatch(g.c_str(), relpath.c_str(), 0) == 0 || fnmatch(g.c_str(), name.c_str(), 0) == 0;
  });
}

// The text must be a config `ootci plan check` accepts before it replaces anything.
void validate(const std::string& path, const std::string& text) {
  SuiteConfigResult r = parse_suite_config(load_yaml_text(path, text));
  if (!r.ok())
    throw Error(fmt::format("the config proposed for {} does not validate: {}", path, r.errors[0]));
}

std::string plural(size_t n, const std::string& word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
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
      TestMode mode = index.mode(b.base, v).value_or(TestMode::skip);
      ++c.by_mode[mode];
      c.by_test_id[v.test_id] = to_string(mode);
    }
  }
  return c;
}

// global.supported_dtypes as Spyre reads it: an empty list filters nothing.
std::optional<std::set<std::string>> global_dtypes(const Capabilities& caps) {
  if (!caps.supported_dtypes || caps.supported_dtypes->empty()) return std::nullopt;
  return caps.supported_dtypes;
}

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
};

FileOutcome propose_file(const ProposeRequest& req, const FileEvidence& f, const Capabilities& caps,
                         std::ostream& out, std::ostream& err) {
  std::vector<std::vector<Bucket>> buckets;
  for (const BaseEvidence& b : f.bases) buckets.push_back(bucket_variants(b, caps));

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
  validate(path, text);
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
       {TestMode::mandatory_success, TestMode::xfail, TestMode::xfail_strict, TestMode::skip})
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
  return outcome;
}

}  // namespace

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
  auto store = open_existing(req.evidence_path);
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
  for (const FileEvidence& f : files) {
    try {
      FileOutcome outcome = propose_file(req, f, caps.of(f.relpath), out, err);
      ++statuses[outcome.status];
      for (const auto& [test_id, mode] : outcome.modes) variants[test_id] = mode;
    } catch (const Error& e) {
      err << fmt::format("error: {}: {}\n", f.relpath, e.what());
      code = 1;
    }
  }
  if (!req.variants_path.empty())
    write_file_atomically(req.variants_path,
                          nlohmann::json{{"version", 1}, {"variants", variants}}.dump(2) + "\n");
  out << fmt::format("{}: {} created, {} updated, {} unchanged{}\n", plural(files.size(), "file"),
                     statuses["created"], statuses["updated"], statuses["unchanged"],
                     req.dry_run ? " (dry run: nothing written)" : "");
  return code;
}

namespace {

std::string move_name(const Move& m) {
  std::string cls = split_base(m.base).first;
  return (cls.empty() ? "" : cls + "::") + m.variant;
}

}  // namespace

int rebucket(const RebucketRequest& req, std::ostream& out, std::ostream& err) {
  auto store = open_existing(req.evidence_path);
  std::optional<RunInfo> run = store->run(req.run_id);
  if (!run) throw Error(fmt::format("run {} not found in {}", req.run_id, req.evidence_path));
  std::vector<TestResult> results = store->results(req.run_id);

  // The latest discovery of each file: its variants, their bases and the ops they called.
  std::map<std::string, DiscoveredFile> discovery;
  for (const auto& d : store->latest_discoveries()) discovery[d.relpath] = d;
  std::map<std::string, std::vector<TestResult>> discovery_results;               // by relpath
  std::map<std::string, std::map<std::string, std::vector<std::string>>> ops_of;  // by run id
  std::map<std::string, std::vector<TestResult>> run_cache;
  for (const auto& [relpath, d] : discovery) {
    if (!run_cache.count(d.run_id)) run_cache[d.run_id] = store->results(d.run_id);
    for (const TestResult& r : run_cache[d.run_id])
      if (r.file == relpath && !r.base.empty()) discovery_results[relpath].push_back(r);
  }
  std::map<std::string, std::string> base_of;
  for (const auto& [relpath, rs] : discovery_results)
    for (const TestResult& r : rs) base_of[r.test_id] = r.base;
  for (TestResult& r : results)
    if (r.base.empty() && base_of.count(r.test_id)) r.base = base_of[r.test_id];

  std::vector<Regression> regressions = regressions_in(req.run_id, results);
  std::vector<TestResult> with_base;
  for (const TestResult& r : results)
    if (!r.base.empty()) with_base.push_back(r);
  HistoryLookup history = [&](const TestResult& in_run) {
    std::vector<TestResult> out;
    for (TestResult& h : store->history(in_run.test_id, req.promote_after + 50))
      if (h.finished_ms <= in_run.finished_ms) out.push_back(std::move(h));
    return out;
  };
  std::vector<Move> moves = promotions(with_base, history, req.promote_after);

  FileCapabilities file_caps = load_capabilities(req.backend, req.sources, err);
  const Capabilities& caps = file_caps.code;
  std::set<std::string> relpaths;
  for (const TestResult& r : with_base) relpaths.insert(r.file);
  for (const auto& [relpath, d] : discovery) relpaths.insert(relpath);

  int code = 0;
  std::map<std::string, ConfigState> states;
  std::map<std::string, ExistingConfig> configs;
  for (const std::string& relpath : relpaths) {
    std::string path = (fs::path(req.out_dir) / config_file_name(relpath)).string();
    if (!fs::exists(path)) continue;
    try {
      configs[relpath] = read_existing_config(path);
    } catch (const Error& e) {
      err << fmt::format("error: {}: {}\n", relpath, e.what());
      code = 1;
      continue;
    }
    std::vector<TestResult> evidence;
    for (const TestResult& r : with_base)
      if (r.file == relpath) evidence.push_back(r);
    const auto& disc = discovery_results[relpath];
    evidence.insert(evidence.end(), disc.begin(), disc.end());
    std::map<std::string, std::vector<std::string>> ops;
    if (discovery.count(relpath)) {
      const std::string& id = discovery[relpath].run_id;
      if (!ops_of.count(id)) ops_of[id] = store->ops_of_run(id);
      ops = ops_of[id];
    }
    ConfigState& s = states[relpath];
    s.relpath = relpath;
    s.evidence = group_evidence(relpath, evidence, ops);
    s.generated = configs[relpath].generated;
    s.human_rules = configs[relpath].human_rules;
    s.global_dtypes = global_dtypes(file_caps.of(relpath));
  }
  std::set<std::string> taken;
  for (const Move& m : moves) taken.insert(m.test_id);
  for (auto& [relpath, s] : states) {
    std::vector<Move> admitted = admissions(s, caps, taken);
    moves.insert(moves.end(), admitted.begin(), admitted.end());
  }
  for (auto& [relpath, s] : states) mark_human(s, moves);

  size_t promoted = std::count_if(moves.begin(), moves.end(),
                                  [](const Move& m) { return m.kind == Move::promote; });
  out << fmt::format("run {}: {}; {}, {}, {}\n", req.run_id, plural(results.size(), "result"),
                     plural(promoted, "promotion"), plural(moves.size() - promoted, "admission"),
                     plural(regressions.size(), "regression candidate"));
  std::map<std::string, std::vector<const Move*>> by_file;
  for (const Move& m : moves) by_file[m.relpath].push_back(&m);
  for (const auto& [relpath, ms] : by_file) {
    std::string path = (fs::path(req.out_dir) / config_file_name(relpath)).string();
    out << fmt::format(
        "{} ({}{})\n", relpath, path,
        states.count(relpath) ? "" : "; no config there: run `ootci select propose`");
    for (const Move* m : ms)
      out << fmt::format("  {} {}: {}{}\n", m->kind == Move::promote ? "promote" : "admit",
                         move_name(*m), m->reason, m->human ? " [human entry: not written]" : "");
  }

  std::string regressions_path = (fs::path(req.out_dir) / "regressions.json").string();
  write_file_atomically(regressions_path, regressions_json(regressions).dump(2) + "\n");
  out << fmt::format(
      "regression candidates (mandatory_success failures, never demoted): {}, in "
      "{}\n",
      regressions.size(), regressions_path);
  for (const Regression& r : regressions)
    out << fmt::format("  {}  {}\n", r.test_id, quote_error(r.error_class, r.message));

  if (!req.write) {
    if (!moves.empty()) out << "not written: pass --write to apply the moves\n";
    return code;
  }
  for (const auto& [relpath, ms] : by_file) {
    auto s = states.find(relpath);
    if (s == states.end()) continue;
    std::vector<Move> own;
    for (const Move* m : ms)
      if (!m->human) own.push_back(*m);
    if (own.empty()) continue;
    const ExistingConfig& existing = configs[relpath];
    AppliedMoves applied = apply_moves(s->second, own);
    for (const auto& [m, why] : applied.not_written)
      out << fmt::format("not written: {}: {}\n", move_name(*m), why);
    if (applied.written == 0) continue;
    std::string text =
        render_config(relpath, req.backend.select.labels, applied.decisions, &existing, false);
    try {
      validate(existing.path, text);
    } catch (const Error& e) {
      err << fmt::format("error: {}\n", e.what());
      code = 1;
      continue;
    }
    if (text == read_file_or_empty(existing.path)) continue;
    write_file_atomically(existing.path, text);
    out << fmt::format("wrote {}: {} applied\n", existing.path, plural(applied.written, "move"));
  }
  return code;
}

}  // namespace ootci
