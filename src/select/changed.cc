#include "select/changed.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "base/enum_names.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/sha256.h"
#include "evidence/evidence_store.h"
#include "plan/plan_resolve.h"
#include "select/budget.h"
#include "select/inputs_only.h"
#include "select/native_functions.h"
#include "select/second_stage.h"

namespace ootci {
namespace {

// At most this many reasons per selected test or file: the first ones say why, the count says
// how much more.
constexpr size_t kMaxReasons = 8;

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
  Evidence evidence = Evidence::kOp;
  std::string with;  // the reason's tail after "the test called <op>"
};

// How `change` reaches a test that called `called`: nullopt when the test ran that op only with
// dtypes the change cannot affect.
std::optional<Reach> reach(const OpChange& change, const std::string& called, const TestDtypes& t,
                           bool ignore_dtypes) {
  auto ran = t.ran_with.find(called);
  if (change.dtypes.empty() || ignore_dtypes) {
    if (ran != t.ran_with.end() && t.only_in_inputs(called, ran->second))
      return Reach{Evidence::kInputsOnly, " only while generating its inputs"};
    return Reach{};
  }
  if (ran == t.ran_with.end())
    return Reach{Evidence::kOpAnyDtype, " (its dtypes were not recorded)"};
  std::set<std::string> hit;
  std::set_intersection(ran->second.begin(), ran->second.end(), change.dtypes.begin(),
                        change.dtypes.end(), std::inserter(hit, hit.end()));
  if (hit.empty()) return std::nullopt;
  std::string with = fmt::format(" with {}", fmt::join(hit, ", "));
  if (t.only_in_inputs(called, hit))
    return Reach{Evidence::kInputsOnly, with + " only while generating its inputs"};
  return Reach{Evidence::kOpAndDtype, with};
}

}  // namespace

void ChangeFacts::merge(const ChangeFacts& other) {
  full_plan.insert(full_plan.end(), other.full_plan.begin(), other.full_plan.end());
  for (const auto& [op, changes] : other.ops)
    ops[op].insert(ops[op].end(), changes.begin(), changes.end());
  for (const auto& [f, why] : other.files) files[f].insert(files[f].end(), why.begin(), why.end());
}

std::string to_string(Evidence e) {
  static constexpr EnumName<Evidence> kNames[] = {
      {Evidence::kTestChanged, "test changed"},
      {Evidence::kOpAndDtype, "op and dtype"},
      {Evidence::kOp, "op"},
      {Evidence::kOpAnyDtype, "op, dtypes not recorded"},
      {Evidence::kInputsOnly, "op in input generation only"},
      {Evidence::kUnknown, "no evidence"},
  };
  return std::string(enum_text(kNames, e));
}

nlohmann::json ChangedSelection::to_json() const {
  nlohmann::json strength = nlohmann::json::object();
  for (const auto& [id, e] : evidence) strength[id] = to_string(e);
  nlohmann::json out = {{"files", files},       {"tests", tests},     {"reasons", reasons},
                        {"evidence", strength}, {"dropped", dropped}, {"summary", summary}};
  if (!then_tests.empty()) out["then"] = {{"tests", then_tests}, {"when", kSecondStageWhen}};
  return out;
}

void ChangedSelection::add_reason(const std::string& id, const std::string& why) {
  std::vector<std::string>& all = reasons[id];
  if (std::find(all.begin(), all.end(), why) != all.end()) return;
  if (all.size() < kMaxReasons) {
    all.push_back(why);
  } else if (all.size() == kMaxReasons) {
    all.push_back("... and more");
  }
}

void ChangedSelection::note_evidence(const std::string& id, Evidence e) {
  auto [it, fresh] = evidence.emplace(id, e);
  if (!fresh && e < it->second) it->second = e;
}

namespace {

// Plan files and tests run for lack of evidence (missing evidence means running more).
struct FailOpen {
  size_t undiscovered = 0;  // files never discovered
  size_t stale = 0;         // files changed since their discovery
  size_t unrecorded = 0;    // tests that failed in discovery without recorded ops
};

// The full plan: every file runs whole.
void select_full_plan(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                      ChangedSelection& s) {
  for (const auto& f : plan) {
    s.files.insert(f.relpath);
    s.note_evidence(f.relpath, Evidence::kUnknown);
    for (const auto& why : facts.full_plan) s.add_reason(f.relpath, "full plan: " + why);
  }
}

// Changed upstream test files run whole.
void select_changed_files(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                          ChangedSelection& s) {
  for (const auto& f : plan) {
    auto it = facts.files.find(f.relpath);
    if (it == facts.files.end()) continue;
    s.files.insert(f.relpath);
    s.note_evidence(f.relpath, Evidence::kTestChanged);
    for (const auto& why : it->second) s.add_reason(f.relpath, why);
  }
}

// The discovery that still describes `f`, or nullptr when there is none and the file runs whole.
const DiscoveredFile* current_discovery(const PlanFileRef& f,
                                        const std::map<std::string, DiscoveredFile>& discovered,
                                        ChangedSelection& s, FailOpen& fail_open) {
  auto d = discovered.find(f.relpath);
  std::string why;
  if (d == discovered.end()) {
    ++fail_open.undiscovered;
    why = "no execution evidence: the file was never discovered (ootci discover), so it runs whole";
  } else if (d->second.file_hash != file_sha256(f.path)) {
    ++fail_open.stale;
    why = fmt::format(
        "stale execution evidence: the file changed since its discovery (run {}), so it runs "
        "whole",
        d->second.run_id);
  } else {
    return &d->second;
  }
  s.files.insert(f.relpath);
  s.note_evidence(f.relpath, Evidence::kUnknown);
  s.add_reason(f.relpath, why);
  return nullptr;
}

// The ops a change touches, by op family: a test that called any op of the family is reached.
using ChangeFamilies = std::map<std::string, std::vector<const OpChange*>>;

// Selects `test` for each changed op it called, with the strongest evidence and one reason per
// change.
void select_test(const std::string& test, const std::vector<std::string>& called_ops,
                 const RunFacts& run, const ChangeFamilies& families, bool ignore_dtypes,
                 InputsOnlyMode& mode, ChangedSelection& s) {
  const TestDtypes dtypes = test_dtypes(run.op_dtypes, run.input_op_dtypes, test);
  std::set<const OpChange*> done;  // changes already explained for this test
  for (const auto& called : called_ops) {
    auto fam = families.find(op_family(called));
    if (fam == families.end()) continue;
    for (const OpChange* change : fam->second) {
      std::optional<Reach> r = reach(*change, called, dtypes, ignore_dtypes);
      if (!r || !mode.selects(test, fam->first, r->evidence)) continue;
      s.tests.insert(test);
      s.note_evidence(test, r->evidence);
      if (!done.insert(change).second) continue;
      std::string only = change->dtypes.empty() || ignore_dtypes
                             ? ""
                             : fmt::format(", for {} only ({})", fmt::join(change->dtypes, ", "),
                                           change->dtype_why);
      s.add_reason(test,
                   fmt::format("{}{}; the test called {}{}", change->why, only, called, r->with));
    }
  }
}

// A variant of `relpath` that failed in discovery without recorded ops (a crash loses them):
// unknown, so it runs. Returns how many.
size_t select_unrecorded(const std::string& relpath, const RunFacts& run, ChangedSelection& s) {
  size_t n = 0;
  for (const auto& r : run.results) {
    if (r.file != relpath || r.name.empty() || !is_failure(r.outcome) || run.ops.count(r.test_id))
      continue;
    ++n;
    s.tests.insert(r.test_id);
    s.note_evidence(r.test_id, Evidence::kUnknown);
    s.add_reason(r.test_id,
                 fmt::format("no ops recorded: it {} in discovery ({}), so it may call any op",
                             failed_verb(r.outcome), error_or_outcome(r)));
  }
  return n;
}

// For touched ops: the tests of every discovered file whose latest discovery called a changed op.
FailOpen select_by_ops(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                       EvidenceStore& store, const SelectOptions& options, InputsOnlyMode& mode,
                       ChangedSelection& s) {
  ChangeFamilies families;
  for (const auto& [op, changes] : facts.ops)
    for (const auto& c : changes) families[op_family(op)].push_back(&c);
  std::map<std::string, DiscoveredFile> discovered;
  for (auto& d : store.latest_discoveries()) discovered[d.relpath] = d;
  RunFactCache runs(store, options.staged);
  FailOpen fail_open;
  for (const auto& f : plan) {
    if (s.files.count(f.relpath)) continue;
    const DiscoveredFile* d = current_discovery(f, discovered, s, fail_open);
    if (!d) continue;
    const RunFacts& run = runs.of(d->run_id);
    std::string prefix = f.relpath + "::";
    mode.see_file(f.relpath, prefix, run);
    for (auto it = run.ops.lower_bound(prefix);
         it != run.ops.end() && it->first.rfind(prefix, 0) == 0; ++it)
      select_test(it->first, it->second, run, families, options.ignore_dtypes, mode, s);
    fail_open.unrecorded += select_unrecorded(f.relpath, run, s);
  }
  return fail_open;
}

// The summary, written once everything is decided.
void write_summary(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                   const SelectOptions& options, const FailOpen& fail_open,
                   const InputsOnlyMode& mode, ChangedSelection& s) {
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
    if (!every && !options.ignore_dtypes) touched_dtypes[op] = dtypes;
  }
  s.summary["touched_ops"] = touched;
  // Ops whose changes can affect some dtypes only; an op not listed: every dtype.
  s.summary["touched_dtypes"] = touched_dtypes;
  s.summary["full_plan"] = facts.full_plan;
  s.summary["plan_files"] = plan.size();
  s.summary["undiscovered_files"] = fail_open.undiscovered;
  s.summary["stale_files"] = fail_open.stale;
  s.summary["unrecorded_tests"] = fail_open.unrecorded;
  mode.summarize(s, s.summary);
  s.summary["selected_files"] = s.files.size();
  s.summary["selected_tests"] = s.tests.size();
}

}  // namespace

ChangedSelection select_from_facts(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                                   EvidenceStore& store, const SelectOptions& options) {
  std::unique_ptr<InputsOnlyMode> mode = inputs_only_mode(options);
  ChangedSelection s;
  FailOpen fail_open;
  if (!facts.full_plan.empty()) {
    select_full_plan(facts, plan, s);
  } else {
    select_changed_files(facts, plan, s);
    if (!facts.ops.empty()) fail_open = select_by_ops(facts, plan, store, options, *mode, s);
  }
  mode->decide(s);
  write_summary(facts, plan, options, fail_open, *mode, s);
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

namespace {

// "backend FROM..TO: 3 files changed (2 kernel, 1 test)" per side, then why the full plan runs
// and which ops the changes touch.
std::string changes_text(const nlohmann::json& summary) {
  std::string out;
  for (const char* side : {"backend", "upstream"}) {
    if (!summary.contains(side)) continue;
    const auto& r = summary[side];
    std::map<std::string, int> effects;
    for (const auto& f : r["files"]) ++effects[f.value("effect", "")];
    std::string counts;
    for (const auto& [effect, n] : effects)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, effect);
    out += fmt::format("{} {}: {} files changed{}\n", side, r["range"].get<std::string>(),
                       r["files"].size(), counts.empty() ? "" : " (" + counts + ")");
  }
  const auto& full = summary["full_plan"];
  if (!full.empty()) {
    out += "full plan:\n";
    for (const auto& why : full) out += fmt::format("  {}\n", why.get<std::string>());
  }
  const auto& ops = summary["touched_ops"];
  if (!ops.empty()) {
    std::vector<std::string> names;
    const auto& dtypes = summary.value("touched_dtypes", nlohmann::json::object());
    for (const auto& op : ops) {
      std::string name = op.get<std::string>();
      if (dtypes.contains(name))
        name += fmt::format(" ({} only)",
                            fmt::join(dtypes[name].get<std::vector<std::string>>(), ", "));
      names.push_back(name);
    }
    out += fmt::format("touched ops: {}\n", fmt::join(names, ", "));
  }
  return out;
}

// What --budget kept and dropped, and the recall it puts at risk.
std::string budget_text(const nlohmann::json& b) {
  auto side = [](const nlohmann::json& j) {
    std::vector<std::string> kinds;
    for (const auto& [kind, n] : j["by_evidence"].items())
      kinds.push_back(fmt::format("{} {}", n.get<size_t>(), kind));
    return fmt::format("{} tests and {} files ({:.1f} s{}{})", j["tests"].get<size_t>(),
                       j["files"].get<size_t>(), j["seconds"].get<double>(),
                       kinds.empty() ? "" : "; by evidence: ", fmt::join(kinds, ", "));
  };
  std::string out = fmt::format("budget {:.0f}% of {:.1f} s of test time: kept {}; dropped {}\n",
                                100 * b["share"].get<double>(), b["plan_seconds"].get<double>(),
                                side(b["kept"]), side(b["dropped"]));
  if (b["recall_at_risk"].is_null())
    return out +
           "recall at risk: no breakages in the selected tests' history to estimate it from\n";
  return out + fmt::format(
                   "recall at risk, from history: the dropped tests went from passing to failing "
                   "{} times in their last {} results, the kept ones {} times: about {:.0f}% of "
                   "what the selection would catch\n",
                   b["dropped"]["breakages"].get<int>(), b["history_window"].get<int>(),
                   b["kept"]["breakages"].get<int>(), 100 * b["recall_at_risk"].get<double>());
}

}  // namespace

std::string format_changed_summary(const ChangedSelection& s) {
  std::string out = changes_text(s.summary);
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
  if (s.summary.contains("budget")) out += budget_text(s.summary["budget"]);
  return out;
}

}  // namespace ootci
