// `ootci select rebucket` as a function: a run's evidence in, moves (and with --write, edited
// configs) and regressions.json out. The moves themselves are decided in rebucket.cc.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "adapt/bucket_changes.h"
#include "adapt/config_writer.h"
#include "adapt/propose.h"
#include "adapt/rebucket.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/text.h"

namespace ootci {

namespace fs = std::filesystem;

namespace {

std::string move_name(const Move& m) {
  std::string cls = split_base(m.base).first;
  return (cls.empty() ? "" : cls + "::") + m.variant;
}

// The run's results (with the bases discovery knows) and the latest discovery of each file: its
// variants, their bases and the ops they called.
struct RebucketEvidence {
  std::vector<TestResult> results;
  std::vector<TestResult> with_base;                // the results that have a config entry to move
  std::map<std::string, DiscoveredFile> discovery;  // by relpath
  std::map<std::string, std::vector<TestResult>> discovery_results;               // by relpath
  std::map<std::string, std::map<std::string, std::vector<std::string>>> ops_of;  // by run id
};

RebucketEvidence read_evidence(EvidenceStore& store, const std::string& run_id) {
  RebucketEvidence e;
  e.results = store.results(run_id);
  for (const auto& d : store.latest_discoveries()) e.discovery[d.relpath] = d;
  std::map<std::string, std::vector<TestResult>> run_cache;
  for (const auto& [relpath, d] : e.discovery) {
    if (!run_cache.count(d.run_id)) run_cache[d.run_id] = store.results(d.run_id);
    for (const TestResult& r : run_cache[d.run_id])
      if (r.file == relpath && !r.base.empty()) e.discovery_results[relpath].push_back(r);
  }
  std::map<std::string, std::string> base_of;
  for (const auto& [relpath, rs] : e.discovery_results)
    for (const TestResult& r : rs) base_of[r.test_id] = r.base;
  for (TestResult& r : e.results)
    if (r.base.empty() && base_of.count(r.test_id)) r.base = base_of[r.test_id];
  for (const TestResult& r : e.results)
    if (!r.base.empty()) e.with_base.push_back(r);
  return e;
}

// Each file's config in out_dir and the evidence of its variants; a config that cannot be read
// is an error (code 1) and its file is left alone.
struct ConfigStates {
  std::map<std::string, ConfigState> states;
  std::map<std::string, ExistingConfig> configs;
  int code = 0;
};

ConfigStates read_states(EvidenceStore& store, RebucketEvidence& e, const RebucketRequest& req,
                         const FileCapabilities& file_caps, std::ostream& err) {
  std::set<std::string> relpaths;
  for (const TestResult& r : e.with_base) relpaths.insert(r.file);
  for (const auto& [relpath, d] : e.discovery) relpaths.insert(relpath);
  ConfigStates c;
  for (const std::string& relpath : relpaths) {
    std::string path = (fs::path(req.out_dir) / config_file_name(relpath)).string();
    if (!fs::exists(path)) continue;
    try {
      c.configs[relpath] = read_existing_config(path);
    } catch (const Error& ex) {
      err << fmt::format("error: {}: {}\n", relpath, ex.what());
      c.code = 1;
      continue;
    }
    std::vector<TestResult> evidence;
    for (const TestResult& r : e.with_base)
      if (r.file == relpath) evidence.push_back(r);
    const auto& disc = e.discovery_results[relpath];
    evidence.insert(evidence.end(), disc.begin(), disc.end());
    std::map<std::string, std::vector<std::string>> ops;
    if (e.discovery.count(relpath)) {
      const std::string& id = e.discovery[relpath].run_id;
      if (!e.ops_of.count(id)) e.ops_of[id] = store.ops_of_run(id);
      ops = e.ops_of[id];
    }
    ConfigState& s = c.states[relpath];
    s.relpath = relpath;
    s.evidence = group_evidence(relpath, evidence, ops);
    s.generated = c.configs[relpath].generated;
    s.human_rules = c.configs[relpath].human_rules;
    s.global_dtypes = global_dtypes(file_caps.of(relpath));
  }
  return c;
}

void print_moves(const std::map<std::string, std::vector<const Move*>>& by_file,
                 const ConfigStates& c, const std::string& out_dir, std::ostream& out) {
  for (const auto& [relpath, ms] : by_file) {
    std::string path = (fs::path(out_dir) / config_file_name(relpath)).string();
    out << fmt::format(
        "{} ({}{})\n", relpath, path,
        c.states.count(relpath) ? "" : "; no config there: run `ootci select propose`");
    for (const Move* m : ms)
      out << fmt::format("  {} {}: {}{}\n", m->kind == Move::kPromote ? "promote" : "admit",
                         move_name(*m), m->reason, m->human ? " [human entry: not written]" : "");
  }
}

void print_regressions(const std::vector<Regression>& regressions, const std::string& out_dir,
                       std::ostream& out) {
  std::string regressions_path = (fs::path(out_dir) / "regressions.json").string();
  write_file_atomically(regressions_path, regressions_json(regressions).dump(2) + "\n");
  out << fmt::format(
      "regression candidates (mandatory_success failures, never demoted): {}, in "
      "{}\n",
      regressions.size(), regressions_path);
  for (const Regression& r : regressions)
    out << fmt::format("  {}  {}\n", r.test_id, quote_error(r.error_class, r.message));
}

// Applies each file's own (not human) moves to its config; returns 1 if a result did not validate.
int write_moves(const std::map<std::string, std::vector<const Move*>>& by_file, ConfigStates& c,
                const RebucketRequest& req, std::ostream& out, std::ostream& err) {
  int code = 0;
  for (const auto& [relpath, ms] : by_file) {
    auto s = c.states.find(relpath);
    if (s == c.states.end()) continue;
    std::vector<Move> own;
    for (const Move* m : ms)
      if (!m->human) own.push_back(*m);
    if (own.empty()) continue;
    const ExistingConfig& existing = c.configs[relpath];
    AppliedMoves applied = apply_moves(s->second, own);
    for (const auto& [m, why] : applied.not_written)
      out << fmt::format("not written: {}: {}\n", move_name(*m), why);
    if (applied.written == 0) continue;
    std::string text =
        render_config(relpath, req.backend.select.labels, applied.decisions, &existing, false);
    try {
      validate_proposed_config(existing.path, text);
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

}  // namespace

int rebucket(const RebucketRequest& req, std::ostream& out, std::ostream& err) {
  auto store = open_existing_evidence(req.evidence_path);
  std::optional<RunInfo> run = store->run(req.run_id);
  if (!run) throw Error(fmt::format("run {} not found in {}", req.run_id, req.evidence_path));
  RebucketEvidence e = read_evidence(*store, req.run_id);

  std::vector<Regression> regressions = regressions_in(req.run_id, e.results);
  HistoryLookup history = [&](const TestResult& in_run) {
    std::vector<TestResult> out;
    for (TestResult& h : store->history(in_run.test_id, req.promote_after + 50))
      if (h.finished_ms <= in_run.finished_ms) out.push_back(std::move(h));
    return out;
  };
  std::vector<Move> moves = promotions(e.with_base, history, req.promote_after);

  FileCapabilities file_caps = load_capabilities(req.backend, req.sources, err);
  ConfigStates c = read_states(*store, e, req, file_caps, err);
  std::set<std::string> taken;
  for (const Move& m : moves) taken.insert(m.test_id);
  for (auto& [relpath, s] : c.states) {
    std::vector<Move> admitted = admissions(s, file_caps.code, taken);
    moves.insert(moves.end(), admitted.begin(), admitted.end());
  }
  for (auto& [relpath, s] : c.states) mark_human(s, moves);

  size_t promoted = std::count_if(moves.begin(), moves.end(),
                                  [](const Move& m) { return m.kind == Move::kPromote; });
  out << fmt::format("run {}: {}; {}, {}, {}\n", req.run_id, plural(e.results.size(), "result"),
                     plural(promoted, "promotion"), plural(moves.size() - promoted, "admission"),
                     plural(regressions.size(), "regression candidate"));
  std::vector<BucketChange> changes;
  for (const Move& m : moves)
    changes.push_back({m.relpath, move_name(m), to_string(m.from), to_string(m.to),
                       m.human ? m.reason + " [human entry: not written]" : m.reason});
  record_bucket_changes(req.backend, "rebucket", req.write, changes, err);
  std::map<std::string, std::vector<const Move*>> by_file;
  for (const Move& m : moves) by_file[m.relpath].push_back(&m);
  print_moves(by_file, c, req.out_dir, out);
  print_regressions(regressions, req.out_dir, out);

  if (!req.write) {
    if (!moves.empty()) out << "not written: pass --write to apply the moves\n";
    return c.code;
  }
  return std::max(c.code, write_moves(by_file, c, req, out, err));
}

}  // namespace ootci
