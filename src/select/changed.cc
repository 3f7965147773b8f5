#include "select/changed.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "base/sha256.h"
#include "evidence/second_stage.h"
#include "plan/plan_resolve.h"
#include "run/run_manifest.h"
#include "select/budget.h"
#include "select/discover.h"
#include "select/native_functions.h"

namespace ootci {
namespace {

// At most this many reasons per selected test or file: the first ones say why, the count says
// how much more.
constexpr size_t kMaxReasons = 8;

// Keeps the strongest evidence seen for a test or file.
void note_evidence(ChangedSelection& s, const std::string& id, Evidence e) {
  auto [it, fresh] = s.evidence.emplace(id, e);
  if (!fresh && e < it->second) it->second = e;
}

void add_reason(std::vector<std::string>& reasons, const std::string& why) {
  if (std::find(reasons.begin(), reasons.end(), why) != reasons.end()) return;
  if (reasons.size() < kMaxReasons) {
    reasons.push_back(why);
  } else if (reasons.size() == kMaxReasons) {
    reasons.push_back("... and more");
  }
}

// "" for a file that cannot be read: it is then simply "changed".
std::string file_sha256(const std::string& path) {
  auto bytes = read_file_bytes(path);
  return bytes ? sha256_hex(*bytes) : "";
}

// What discovery recorded of one test's dtypes.
struct TestDtypes {
  std::map<std::string, std::set<std::string>> ran_with;  // op -> dtypes; absent: not recorded
  std::set<std::string> input_only;  // "op:dtype" pairs reached only while generating inputs
  bool only_in_inputs(const std::string& op, const std::set<std::string>& dtypes) const {
    if (dtypes.empty()) return false;
    for (const auto& d : dtypes)
      if (!input_only.count(op + ":" + d)) return false;
    return true;
  }
};

TestDtypes test_dtypes(const std::map<std::string, std::vector<std::string>>& pairs,
                       const std::map<std::string, std::vector<std::string>>& inputs,
                       const std::string& test_id) {
  TestDtypes t;
  if (auto p = pairs.find(test_id); p != pairs.end())
    for (const auto& pair : p->second)
      if (auto colon = pair.rfind(':');
          colon != std::string::npos && colon > 0 && pair[colon - 1] != ':')
        t.ran_with[pair.substr(0, colon)].insert(pair.substr(colon + 1));
  if (auto p = inputs.find(test_id); p != inputs.end())
    t.input_only.insert(p->second.begin(), p->second.end());
  return t;
}

struct Reach {
  Evidence evidence = Evidence::op;
  std::string with;  // the reason's tail after "the test called <op>"
};

// How `change` reaches a test that called `called`: nullopt when the test ran that op only with
// dtypes the change cannot affect.
std::optional<Reach> reach(const OpChange& change, const std::string& called, const TestDtypes& t,
                           bool ignore_dtypes) {
  auto ran = t.ran_with.find(called);
  if (change.dtypes.empty() || ignore_dtypes) {
    if (ran != t.ran_with.end() && t.only_in_inputs(called, ran->second))
      return Reach{Evidence::inputs_only, " only while generating its inputs"};
    return Reach{};
  }
  if (ran == t.ran_with.end())
    return Reach{Evidence::op_any_dtype, " (its dtypes were not recorded)"};
  std::set<std::string> hit;
  std::set_intersection(ran->second.begin(), ran->second.end(), change.dtypes.begin(),
                        change.dtypes.end(), std::inserter(hit, hit.end()));
  if (hit.empty()) return std::nullopt;
  std::string with = fmt::format(" with {}", fmt::join(hit, ", "));
  if (t.only_in_inputs(called, hit))
    return Reach{Evidence::inputs_only, with + " only while generating its inputs"};
  return Reach{Evidence::op_and_dtype, with};
}

}  // namespace

void ChangeFacts::merge(const ChangeFacts& other) {
  full_plan.insert(full_plan.end(), other.full_plan.begin(), other.full_plan.end());
  for (const auto& [op, changes] : other.ops)
    ops[op].insert(ops[op].end(), changes.begin(), changes.end());
  for (const auto& [f, why] : other.files) files[f].insert(files[f].end(), why.begin(), why.end());
}

std::string to_string(Evidence e) {
  switch (e) {
    case Evidence::test_changed:
      return "test changed";
    case Evidence::op_and_dtype:
      return "op and dtype";
    case Evidence::op:
      return "op";
    case Evidence::op_any_dtype:
      return "op, dtypes not recorded";
    case Evidence::inputs_only:
      return "op in input generation only";
    case Evidence::unknown:
      return "no evidence";
  }
  return "";
}

nlohmann::json ChangedSelection::to_json() const {
  nlohmann::json strength = nlohmann::json::object();
  for (const auto& [id, e] : evidence) strength[id] = to_string(e);
  nlohmann::json out = {{"files", files},       {"tests", tests},     {"reasons", reasons},
                        {"evidence", strength}, {"dropped", dropped}, {"summary", summary}};
  if (!then_tests.empty()) out["then"] = {{"tests", then_tests}, {"when", kSecondStageWhen}};
  return out;
}

ChangedSelection select_from_facts(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                                   EvidenceStore& store, const SelectOptions& options) {
  const bool ignore_dtypes = options.ignore_dtypes;
  ChangedSelection s;
  s.summary = facts.summary;
  nlohmann::json touched = nlohmann::json::array();
  nlohmann::json touched_dtypes = nlohmann::json::object();
  for (const auto& [op, changes] : facts.ops) {
    touched.push_back(op);
    std::set<std::string> dtypes;
    bool every = false;
    for (const auto& c : changes) {
      every = every || c.dtypes.empty();
      dtypes.insert(c.dtypes.begin(), c.dtypes.end());
    }
    if (!every && !ignore_dtypes) touched_dtypes[op] = dtypes;
  }
  s.summary["touched_ops"] = touched;
  // Ops whose changes can affect some dtypes only; an op not listed: every dtype.
  s.summary["touched_dtypes"] = touched_dtypes;
  s.summary["full_plan"] = facts.full_plan;
  s.summary["plan_files"] = plan.size();

  if (!facts.full_plan.empty()) {
    for (const auto& f : plan) {
      s.files.insert(f.relpath);
      note_evidence(s, f.relpath, Evidence::unknown);
      for (const auto& why : facts.full_plan) add_reason(s.reasons[f.relpath], "full plan: " + why);
    }
  } else {
    for (const auto& f : plan) {
      auto it = facts.files.find(f.relpath);
      if (it == facts.files.end()) continue;
      s.files.insert(f.relpath);
      note_evidence(s, f.relpath, Evidence::test_changed);
      for (const auto& why : it->second) add_reason(s.reasons[f.relpath], why);
    }
  }

  size_t undiscovered = 0, stale = 0, unrecorded = 0;
  std::set<std::string> inputs_only;  // tests reached only through their input generation
  // --staged: the op families some test calls itself, and per test the families it reached only
  // while generating its inputs.
  std::set<std::string> called_itself;
  std::map<std::string, std::set<std::string>> input_families;
  // test -> what discovery's input probe found, for the tests a shift failed
  std::map<std::string, std::string> value_sensitive;
  std::set<std::string> unprobed;  // files whose tests drew inputs but were never probed
  if (facts.full_plan.empty() && !facts.ops.empty()) {
    // op family -> the changes of its ops
    std::map<std::string, std::vector<const OpChange*>> families;
    for (const auto& [op, changes] : facts.ops)
      for (const auto& c : changes) families[op_family(op)].push_back(&c);
    std::map<std::string, DiscoveredFile> discovered;
    for (auto& d : store.latest_discoveries()) discovered[d.relpath] = d;
    std::map<std::string, std::map<std::string, std::vector<std::string>>> ops_by_run;
    std::map<std::string, std::map<std::string, std::vector<std::string>>> dtypes_by_run;
    std::map<std::string, std::map<std::string, std::vector<std::string>>> inputs_by_run;
    std::map<std::string, std::vector<TestResult>> results_by_run;
    std::map<std::string, std::map<std::string, std::string>> probes_by_run;

    for (const auto& f : plan) {
      if (s.files.count(f.relpath)) continue;
      auto d = discovered.find(f.relpath);
      if (d == discovered.end()) {
        ++undiscovered;
        s.files.insert(f.relpath);
        note_evidence(s, f.relpath, Evidence::unknown);
        add_reason(s.reasons[f.relpath],
                   "no execution evidence: the file was never discovered (ootci discover), so it "
                   "runs whole");
        continue;
      }
      if (d->second.file_hash != file_sha256(f.path)) {
        ++stale;
        s.files.insert(f.relpath);
        note_evidence(s, f.relpath, Evidence::unknown);
        add_reason(s.reasons[f.relpath],
                   fmt::format("stale execution evidence: the file changed since its discovery "
                               "(run {}), so it runs whole",
                               d->second.run_id));
        continue;
      }
      const std::string& run = d->second.run_id;
      if (!ops_by_run.count(run)) ops_by_run[run] = store.ops_of_run(run);
      if (!results_by_run.count(run)) results_by_run[run] = store.results(run);
      if (!dtypes_by_run.count(run)) dtypes_by_run[run] = store.op_dtypes_of_run(run);
      if (!inputs_by_run.count(run)) inputs_by_run[run] = store.input_op_dtypes_of_run(run);
      const auto& ops = ops_by_run[run];
      const auto& pairs = dtypes_by_run[run];
      const auto& inputs = inputs_by_run[run];
      std::string prefix = f.relpath + "::";
      if (options.staged) {
        if (!probes_by_run.count(run)) probes_by_run[run] = store.input_probes_of_run(run);
        const auto& probes = probes_by_run[run];
        bool drew = false, probed = false;
        for (auto it = inputs.lower_bound(prefix);
             it != inputs.end() && it->first.rfind(prefix, 0) == 0; ++it) {
          drew = true;
          if (auto p = probes.find(it->first); p != probes.end()) {
            probed = true;
            if (input_probe_failed(p->second)) value_sensitive[it->first] = p->second;
          }
        }
        if (drew && !probed) unprobed.insert(f.relpath);
      }
      for (auto it = ops.lower_bound(prefix); it != ops.end() && it->first.rfind(prefix, 0) == 0;
           ++it) {
        const TestDtypes dtypes = test_dtypes(pairs, inputs, it->first);
        std::set<const OpChange*> done;  // changes already explained for this test
        for (const auto& called : it->second) {
          auto fam = families.find(op_family(called));
          if (fam == families.end()) continue;
          for (const OpChange* change : fam->second) {
            std::optional<Reach> r = reach(*change, called, dtypes, ignore_dtypes);
            if (!r) continue;
            if (options.staged) {
              if (r->evidence == Evidence::inputs_only)
                input_families[it->first].insert(fam->first);
              else
                called_itself.insert(fam->first);
            }
            if (options.own_calls_only && r->evidence == Evidence::inputs_only) {
              inputs_only.insert(it->first);
              continue;
            }
            s.tests.insert(it->first);
            note_evidence(s, it->first, r->evidence);
            if (!done.insert(change).second) continue;
            std::string only =
                change->dtypes.empty() || ignore_dtypes
                    ? ""
                    : fmt::format(", for {} only ({})", fmt::join(change->dtypes, ", "),
                                  change->dtype_why);
            add_reason(s.reasons[it->first], fmt::format("{}{}; the test called {}{}", change->why,
                                                         only, called, r->with));
          }
        }
      }
      // A variant that failed in discovery without recorded ops (a crash loses them): unknown,
      // so it runs.
      for (const auto& r : results_by_run[run]) {
        if (r.file != f.relpath || r.name.empty() || !is_failure(r.outcome) || ops.count(r.test_id))
          continue;
        ++unrecorded;
        s.tests.insert(r.test_id);
        note_evidence(s, r.test_id, Evidence::unknown);
        add_reason(s.reasons[r.test_id],
                   fmt::format("no ops recorded: it {} in discovery ({}), so it may call any op",
                               failed_verb(r.outcome), error_or_outcome(r)));
      }
    }
  }
  s.summary["undiscovered_files"] = undiscovered;
  s.summary["stale_files"] = stale;
  s.summary["unrecorded_tests"] = unrecorded;
  if (options.staged) {
    // Second stage: tests whose only evidence is input generation of ops that some first-stage
    // test calls itself, so a raising change shows in the first stage. A test whose outcome
    // depends on the values it draws (the input probe failed it) stays: a change of values
    // alone can fail it.
    size_t kept_first = 0;
    for (const auto& [test, families] : input_families) {
      auto e = s.evidence.find(test);
      if (e == s.evidence.end() || e->second != Evidence::inputs_only) continue;
      if (!std::includes(called_itself.begin(), called_itself.end(), families.begin(),
                         families.end()))
        continue;
      if (auto p = value_sensitive.find(test); p != value_sensitive.end()) {
        ++kept_first;
        add_reason(s.reasons[test],
                   fmt::format("first stage: its outcome depends on the values it draws "
                               "(discovery's input probe: it {})",
                               p->second));
        continue;
      }
      s.tests.erase(test);
      s.then_tests.insert(test);
    }
    std::set<std::string> unprobed_second;  // the unprobed files the second stage draws on
    for (const auto& test : s.then_tests)
      if (std::string file = test.substr(0, test.find("::")); unprobed.count(file))
        unprobed_second.insert(file);
    s.summary["second_stage_tests"] = s.then_tests.size();
    s.summary["value_sensitive_first_stage"] = kept_first;
    s.summary["unprobed_files"] = unprobed_second.size();
  }
  size_t left_out = 0;
  for (const auto& t : inputs_only) left_out += !s.tests.count(t);
  if (options.own_calls_only) s.summary["left_out_input_generation"] = left_out;
  s.summary["selected_files"] = s.files.size();
  s.summary["selected_tests"] = s.tests.size();
  return s;
}

ChangedSelection select_changed(const ChangedRequest& req) {
  if (req.backend_range.empty() && req.upstream_range.empty())
    throw Error(
        "nothing changed to select for: give --backend FROM..TO and/or --upstream FROM..TO");
  PlanResult plan = resolve_plan(req.backend);
  if (!plan.ok())
    throw Error(fmt::format("{}: the plan has errors (ootci plan check): {}", req.backend.path,
                            plan.errors.front()));
  std::vector<PlanFileRef> files;
  std::set<std::string> relpaths;
  for (const auto& f : plan.plan["files"]) {
    files.push_back({f["relpath"].get<std::string>(), f["path"].get<std::string>()});
    relpaths.insert(files.back().relpath);
  }
  ChangeFacts facts;
  if (!req.backend_range.empty()) {
    ChangeFacts b =
        backend_changes(req.backend_repo.empty() ? req.backend.device_root : req.backend_repo,
                        req.backend_range, req.dispatch_key);
    facts.merge(b);
    facts.summary["backend"] = b.summary;
  }
  if (!req.upstream_range.empty()) {
    ChangeFacts u =
        upstream_changes(req.upstream_repo.empty() ? req.backend.torch_root : req.upstream_repo,
                         req.upstream_range, relpaths);
    facts.merge(u);
    facts.summary["upstream"] = u.summary;
  }
  auto store = EvidenceStore::open(req.evidence_path);
  ChangedSelection s = select_from_facts(facts, files, *store, req.options);
  if (req.budget > 0)
    apply_budget(s, files, *store, req.budget, {req.backend.name, plan_config_hash(plan.plan)});
  return s;
}

std::string format_changed_summary(const ChangedSelection& s) {
  std::string out;
  for (const char* side : {"backend", "upstream"}) {
    if (!s.summary.contains(side)) continue;
    const auto& r = s.summary[side];
    std::map<std::string, int> effects;
    for (const auto& f : r["files"]) ++effects[f.value("effect", "")];
    std::string counts;
    for (const auto& [effect, n] : effects)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, effect);
    out += fmt::format("{} {}: {} files changed{}\n", side, r["range"].get<std::string>(),
                       r["files"].size(), counts.empty() ? "" : " (" + counts + ")");
  }
  const auto& full = s.summary["full_plan"];
  if (!full.empty()) {
    out += "full plan:\n";
    for (const auto& why : full) out += fmt::format("  {}\n", why.get<std::string>());
  }
  const auto& ops = s.summary["touched_ops"];
  if (!ops.empty()) {
    std::vector<std::string> names;
    const auto& dtypes = s.summary.value("touched_dtypes", nlohmann::json::object());
    for (const auto& op : ops) {
      std::string name = op.get<std::string>();
      if (dtypes.contains(name))
        name += fmt::format(" ({} only)",
                            fmt::join(dtypes[name].get<std::vector<std::string>>(), ", "));
      names.push_back(name);
    }
    out += fmt::format("touched ops: {}\n", fmt::join(names, ", "));
  }
  out += fmt::format("selected: {} whole files of {}, {} tests", s.files.size(),
                     s.summary.value("plan_files", 0), s.tests.size());
  std::vector<std::string> fail_open;
  for (auto [key, what] : {std::pair{"undiscovered_files", "files never discovered"},
                           std::pair{"stale_files", "files changed since discovery"},
                           std::pair{"unrecorded_tests", "tests without recorded ops"}}) {
    int n = s.summary.value(key, 0);
    if (n) fail_open.push_back(fmt::format("{} {}", n, what));
  }
  if (!fail_open.empty())
    out += fmt::format(" (run for lack of evidence: {})", fmt::join(fail_open, ", "));
  out += "\n";
  if (s.summary.contains("second_stage_tests"))
    out += fmt::format(
        "second stage: {} tests that reached a changed op only while generating their inputs; "
        "ootci run runs them when {}\n",
        s.then_tests.size(), kSecondStageWhen);
  if (int n = s.summary.value("value_sensitive_first_stage", 0))
    out += fmt::format(
        "first stage: {} tests that reached a changed op only while generating their inputs, "
        "but whose outcome depends on the values they draw (discovery's input probe)\n",
        n);
  if (int n = s.summary.value("unprobed_files", 0))
    out += fmt::format(
        "warning: {} files of the second stage were discovered without the input probe, so some "
        "of their second-stage tests may fail from changed values alone (ootci discover "
        "--probe-inputs 8)\n",
        n);
  if (s.summary.contains("left_out_input_generation"))
    out += fmt::format(
        "left out: {} tests that reached a changed op only while generating their inputs\n",
        s.summary["left_out_input_generation"].get<size_t>());
  if (s.summary.contains("budget")) {
    const auto& b = s.summary["budget"];
    auto side = [](const nlohmann::json& j) {
      std::vector<std::string> kinds;
      for (const auto& [kind, n] : j["by_evidence"].items())
        kinds.push_back(fmt::format("{} {}", n.get<size_t>(), kind));
      return fmt::format("{} tests and {} files ({:.1f} s{}{})", j["tests"].get<size_t>(),
                         j["files"].get<size_t>(), j["seconds"].get<double>(),
                         kinds.empty() ? "" : "; by evidence: ", fmt::join(kinds, ", "));
    };
    out += fmt::format("budget {:.0f}% of {:.1f} s of test time: kept {}; dropped {}\n",
                       100 * b["share"].get<double>(), b["plan_seconds"].get<double>(),
                       side(b["kept"]), side(b["dropped"]));
    if (b["recall_at_risk"].is_null())
      out += "recall at risk: no breakages in the selected tests' history to estimate it from\n";
    else
      out += fmt::format(
          "recall at risk, from history: the dropped tests went from passing to failing {} "
          "times in their last {} results, the kept ones {} times: about {:.0f}% of what the "
          "selection would catch\n",
          b["dropped"]["breakages"].get<int>(), b["history_window"].get<int>(),
          b["kept"]["breakages"].get<int>(), 100 * b["recall_at_risk"].get<double>());
  }
  return out;
}

}  // namespace ootci
