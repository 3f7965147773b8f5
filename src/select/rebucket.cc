#include "select/rebucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ootci {

namespace {

bool ran(const VariantEvidence& v) {
  return std::any_of(v.results.begin(), v.results.end(),
                     [](const TestResult& r) { return classify(r) != Seen::skipped; });
}

std::string admission_reason(const std::vector<std::string>& newly) {
  return fmt::format(
      "mandatory_success: admitted: {} now {} a device kernel, and so does every op it calls",
      fmt::join(newly, ", "), newly.size() == 1 ? "has" : "have");
}

// One reason for several moves of one test: theirs when they agree.
std::string common_reason(const std::vector<const Move*>& moves) {
  std::set<std::string> distinct;
  for (const Move* m : moves) distinct.insert(m->reason);
  if (distinct.size() == 1) return moves[0]->reason;
  return fmt::format("{} (and {} other reasons)", moves[0]->reason, distinct.size() - 1);
}

}  // namespace

std::vector<Regression> regressions_in(const std::string& run_id,
                                       const std::vector<TestResult>& run_results) {
  std::vector<Regression> out;
  for (const TestResult& r : run_results)
    if (r.mode == "mandatory_success" && (r.outcome == "failed" || r.outcome == "error"))
      out.push_back({r.test_id, r.base, r.error_class, r.message, run_id});
  std::sort(out.begin(), out.end(),
            [](const Regression& a, const Regression& b) { return a.test_id < b.test_id; });
  return out;
}

nlohmann::json regressions_json(const std::vector<Regression>& regressions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : regressions)
    out.push_back({{"test_id", r.test_id},
                   {"base", r.base},
                   {"error_class", r.error_class},
                   {"message", r.message},
                   {"run_id", r.run_id}});
  return out;
}

std::vector<Move> promotions(const std::vector<TestResult>& run_results,
                             const HistoryLookup& history, int promote_after) {
  std::vector<Move> out;
  for (const TestResult& r : run_results) {
    if (r.mode != "xfail" && r.mode != "xfail_strict") continue;
    if (classify(r) != Seen::pass) continue;
    std::vector<TestResult> recent = history(r);
    if (recent.size() < static_cast<size_t>(promote_after)) continue;
    bool all_passed = std::all_of(recent.begin(), recent.begin() + promote_after,
                                  [](const TestResult& h) { return classify(h) == Seen::pass; });
    if (!all_passed) continue;
    Move m;
    m.kind = Move::promote;
    m.relpath = r.file;
    m.base = r.base;
    m.test_id = r.test_id;
    m.variant = r.name;
    m.from = *parse_test_mode(r.mode);
    m.reason =
        fmt::format("mandatory_success: promoted from {}: passed in the last {} {} it ran in",
                    r.mode, promote_after, promote_after == 1 ? "run" : "runs");
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Move& a, const Move& b) { return a.test_id < b.test_id; });
  return out;
}

std::vector<Move> admissions(const ConfigState& state, const Capabilities& caps,
                             const std::set<std::string>& taken) {
  DecisionIndex index(state.generated);
  std::vector<Move> out;
  for (const BaseEvidence& base : state.evidence.bases) {
    for (const VariantEvidence& v : base.variants) {
      if (taken.count(v.test_id) || v.ops.empty()) continue;
      const NameDecision* d = index.governing(base.base, v);
      if (!d) continue;
      TestMode mode = excludes(*d, v) ? TestMode::skip : d->mode;
      if (mode == TestMode::mandatory_success) continue;
      std::vector<std::string> newly;
      for (const auto& op : aten_ops_in(d->reason))
        if (caps.supported_ops.count(op)) newly.push_back(op);
      if (newly.empty()) continue;
      bool all_supported = std::all_of(v.ops.begin(), v.ops.end(), [&](const std::string& op) {
        return caps.supported_ops.count(op) > 0;
      });
      if (!all_supported) continue;
      Move m;
      m.kind = Move::admit;
      m.relpath = state.relpath;
      m.base = base.base;
      m.test_id = v.test_id;
      m.variant = v.name;
      m.from = mode;
      m.reason = admission_reason(newly);
      out.push_back(std::move(m));
    }
  }
  return out;
}

void mark_human(const ConfigState& state, std::vector<Move>& moves) {
  for (Move& m : moves) {
    if (m.relpath != state.relpath) continue;
    NameDecision probe;
    probe.base = m.base;
    probe.variant = m.variant;
    m.human = human_owns(state.human_rules, probe);
  }
}

std::vector<NameDecision> apply_moves(const ConfigState& state, const std::vector<Move>& moves) {
  std::vector<NameDecision> out = state.generated;
  std::map<std::string, std::vector<const Move*>> by_base;
  for (const Move& m : moves)
    if (!m.human && m.relpath == state.relpath) by_base[m.base].push_back(&m);

  for (const auto& [base, ms] : by_base) {
    std::set<std::string> moved;
    for (const Move* m : ms) moved.insert(m->variant);
    auto head =
        std::find_if(out.begin(), out.end(), [&](const NameDecision& d) { return d.name == base; });
    const BaseEvidence* evidence = state.evidence.find(base);
    bool whole =
        head != out.end() && head->ops_exclude.empty() && head->dtypes_exclude.empty() && evidence;
    if (whole) {
      DecisionIndex index(out);
      for (const VariantEvidence& v : evidence->variants)
        if (index.governing(base, v) == &*head && !moved.count(v.name) && ran(v)) whole = false;
    }
    std::vector<const Move*> own;  // moves of variants that keep (or get) their own name
    if (whole) {
      DecisionIndex index(out);
      for (const Move* m : ms) {
        auto v = std::find_if(evidence->variants.begin(), evidence->variants.end(),
                              [&](const VariantEvidence& x) { return x.name == m->variant; });
        if (v != evidence->variants.end() && index.governing(base, *v) != &*head) own.push_back(m);
      }
      head->mode = ms[0]->to;
      head->reason = common_reason(ms);
    } else {
      own = ms;
    }
    for (const Move* m : own) {
      std::string name = variant_config_name(base, m->variant);
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const NameDecision& d) { return d.name == name; });
      if (it == out.end()) {
        NameDecision d;
        d.name = name;
        d.base = base;
        d.variant = m->variant;
        out.push_back(std::move(d));
        it = out.end() - 1;
      }
      it->mode = m->to;
      it->reason = m->reason;
      it->ops_exclude.clear();
      it->dtypes_exclude.clear();
    }
  }
  return out;
}

}  // namespace ootci
