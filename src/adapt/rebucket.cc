#include "adapt/rebucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ootci {

namespace {

bool ran(const VariantEvidence& v) {
  return std::any_of(v.results.begin(), v.results.end(),
                     [](const TestResult& r) { return classify(r) != Seen::kSkipped; });
}

std::string admission_reason(const std::vector<std::string>& newly) {
  return fmt::format(
      "mandatory_success: admitted: {} now {} a device kernel, and so does every op it calls",
      fmt::join(newly, ", "), newly.size() == 1 ? "has" : "have");
}

// One reason for several moves of one entry: theirs when they agree.
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
    if (r.mode == TestMode::kMandatorySuccess && is_failure(r.outcome))
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
    if (r.mode != TestMode::kXfail && r.mode != TestMode::kXfailStrict) continue;
    if (classify(r) != Seen::kPass) continue;
    std::vector<TestResult> recent = history(r);
    if (recent.size() < static_cast<size_t>(promote_after)) continue;
    bool all_passed = std::all_of(recent.begin(), recent.begin() + promote_after,
                                  [](const TestResult& h) { return classify(h) == Seen::kPass; });
    if (!all_passed) continue;
    Move m;
    m.kind = Move::kPromote;
    m.relpath = r.file;
    m.base = r.base;
    m.test_id = r.test_id;
    m.variant = r.name;
    m.from = *r.mode;
    m.reason =
        fmt::format("mandatory_success: promoted from {}: passed in the last {} {} it ran in",
                    to_string(*r.mode), promote_after, promote_after == 1 ? "run" : "runs");
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Move& a, const Move& b) { return a.test_id < b.test_id; });
  return out;
}

std::vector<Move> admissions(const ConfigState& state, const Capabilities& caps,
                             const std::set<std::string>& taken) {
  DecisionIndex index(state.generated, state.global_dtypes);
  std::vector<Move> out;
  for (const BaseEvidence& base : state.evidence.bases) {
    for (const VariantEvidence& v : base.variants) {
      if (taken.count(v.test_id) || v.ops.empty()) continue;
      const NameDecision* d = index.governing(base.base, v);
      if (!d) continue;
      TestMode mode = *index.mode(base.base, v);
      if (mode == TestMode::kMandatorySuccess) continue;
      std::vector<std::string> newly;
      for (const auto& op : aten_ops_in(d->reason))
        if (caps.supported_ops.count(op)) newly.push_back(op);
      if (newly.empty()) continue;
      bool all_supported = std::all_of(v.ops.begin(), v.ops.end(), [&](const std::string& op) {
        return caps.supported_ops.count(op) > 0;
      });
      if (!all_supported) continue;
      Move m;
      m.kind = Move::kAdmit;
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
    m.human = human_owns(state.human_rules, m.base);
  }
}

namespace {

// "; excluded dtype complex64: ..." of an unrestricted entry's reason: it still holds when the
// entry's mode changes, and so do its edits.
std::string excluded_suffix(const std::string& reason) {
  size_t at = reason.find("; excluded ");
  return at == std::string::npos ? "" : reason.substr(at);
}

// The moves of one method, applied to `out` where a config can name them (apply_moves).
class MethodMoves {
 public:
  MethodMoves(const ConfigState& state, const std::string& method,
              const std::vector<const Move*>& moves, AppliedMoves& out)
      : state_(state), method_(method), moves_(moves), out_(out) {
    for (const BaseEvidence& b : state.evidence.bases)
      if (method_of(b.base) == method)
        for (const VariantEvidence& v : b.variants) pool_.push_back({&b.base, &v, ran(v)});
    for (const Move* m : moves) {
      auto p = std::find_if(pool_.begin(), pool_.end(),
                            [&](const PoolVariant& x) { return x.v->test_id == m->test_id; });
      if (p != pool_.end()) variant_of_[m] = &*p;
    }
  }

  void apply() {
    DecisionIndex index(out_.decisions, state_.global_dtypes);
    // What each entry of the method runs (keyed by its dtype include list; [] is the
    // unrestricted entry): the variants that ran and that it does not leave out.
    for (const PoolVariant& p : pool_) {
      if (!p.active) continue;
      const NameDecision* d = index.governing(*p.base, *p.v);
      if (!d) continue;
      (excludes(*d, *p.v) ? left_out_ : runs_[d->dtypes_include]).push_back(&p);
    }
    for (const auto& [include, variants] : runs_) move_whole_entry(include, variants);
    move_whole_dtypes();
    move_excluded_dtypes();
    for (const Move* m : moves_)
      if (!done_.count(m))
        out_.not_written.push_back(
            {m, variant_of_.count(m)
                    ? "a config names no single variant, and the moved variants are not all of an "
                      "entry's or of a dtype's"
                    : "the variant is not in the evidence"});
  }

 private:
  // The moves of exactly these variants, all to one mode; empty otherwise.
  std::vector<const Move*> moves_covering(const std::vector<const PoolVariant*>& variants) const {
    std::vector<const Move*> out;
    for (const PoolVariant* p : variants) {
      auto m = std::find_if(moves_.begin(), moves_.end(), [&](const Move* x) {
        return !done_.count(x) && variant_of_.count(x) && variant_of_.at(x) == p;
      });
      if (m == moves_.end() || (!out.empty() && (*m)->to != out[0]->to)) return {};
      out.push_back(*m);
    }
    return out;
  }

  std::vector<NameDecision*> entry(const std::vector<std::string>& include) {
    std::vector<NameDecision*> out;
    for (NameDecision& d : out_.decisions)
      if (method_of(d.name) == method_ && d.dtypes_include == include) out.push_back(&d);
    return out;
  }

  void written(const std::vector<const Move*>& moves) {
    for (const Move* m : moves) done_.insert(m);
    out_.written += moves.size();
  }

  void move_whole_entry(const std::vector<std::string>& include,
                        const std::vector<const PoolVariant*>& variants) {
    std::vector<const Move*> moves = moves_covering(variants);
    if (moves.empty()) return;
    for (NameDecision* d : entry(include)) {
      d->mode = moves[0]->to;
      d->reason = common_reason(moves) + (include.empty() ? excluded_suffix(d->reason) : "");
    }
    written(moves);
  }

  // The moved variants of one dtype are all that the unrestricted entry runs of it: a
  // dtype-restricted entry for them.
  void move_whole_dtypes() {
    auto unrestricted = runs_.find({});
    if (unrestricted == runs_.end()) return;
    std::map<std::string, std::vector<const PoolVariant*>> by_dtype;
    for (const PoolVariant* p : unrestricted->second)
      if (std::string d = unambiguous_dtype(*p->v); !d.empty()) by_dtype[d].push_back(p);
    std::vector<NameDecision*> heads = entry({});
    for (const auto& [dtype, variants] : by_dtype) {
      std::vector<const Move*> moves = moves_covering(variants);
      if (moves.empty() || !may_restrict_dtype(pool_, dtype, moves[0]->to, state_.global_dtypes))
        continue;
      std::vector<NameDecision> added;
      for (const NameDecision* head : heads)
        added.push_back(dtype_entry(*head, dtype, moves[0]->to, moves));
      written(moves);
      // Appending may move the vector: take the heads again afterwards.
      out_.decisions.insert(out_.decisions.end(), added.begin(), added.end());
      heads = entry({});
    }
  }

  // An entry for `head`'s name restricted to `dtype`, in mode `to`, for the moves' reason.
  static NameDecision dtype_entry(const NameDecision& head, const std::string& dtype, TestMode to,
                                  const std::vector<const Move*>& moves) {
    NameDecision d;
    d.name = head.name;
    d.mode = to;
    d.dtypes_include = {dtype};
    d.reason = common_reason(moves);
    return d;
  }

  // The moved variants are all that the unrestricted entry's dtypes.exclude leaves out of a dtype
  // (admitted, say): the dtype comes off the list, and runs in the entry's mode or, when they move
  // to another, in a dtype-restricted entry.
  void move_excluded_dtypes() {
    std::vector<NameDecision*> heads = entry({});
    if (heads.empty()) return;
    std::vector<std::string> excluded = heads[0]->dtypes_exclude;  // the loop edits the list
    for (const std::string& dtype : excluded) {
      NameDecision only;  // the exclusion of this dtype alone
      only.dtypes_exclude = {dtype};
      std::vector<const PoolVariant*> variants;
      for (const PoolVariant* p : left_out_)
        if (excludes(only, *p->v)) variants.push_back(p);
      std::vector<const Move*> moves = moves_covering(variants);
      if (moves.empty()) continue;
      TestMode to = moves[0]->to;
      bool own_entry = to != heads[0]->mode;
      if (own_entry && !may_restrict_dtype(pool_, dtype, to, state_.global_dtypes)) continue;
      std::vector<NameDecision> added;
      for (NameDecision* head : heads) {
        auto& list = head->dtypes_exclude;
        list.erase(std::remove(list.begin(), list.end(), dtype), list.end());
        // The excluded part of the reason stays while anything else is left out.
        std::string kept = head->reason.substr(0, head->reason.find("; excluded "));
        if (!list.empty() || !head->ops_exclude.empty()) kept += excluded_suffix(head->reason);
        head->reason = own_entry ? kept
                                 : fmt::format("{}; dtype {} runs again: {}", kept, dtype,
                                               common_reason(moves));
        if (own_entry) added.push_back(dtype_entry(*head, dtype, to, moves));
      }
      written(moves);
      out_.decisions.insert(out_.decisions.end(), added.begin(), added.end());
      heads = entry({});
    }
  }

  const ConfigState& state_;
  std::string method_;
  std::vector<const Move*> moves_;
  AppliedMoves& out_;
  std::vector<PoolVariant> pool_;
  std::map<const Move*, const PoolVariant*> variant_of_;
  std::map<std::vector<std::string>, std::vector<const PoolVariant*>> runs_;
  std::vector<const PoolVariant*> left_out_;  // by the governing entry's edits
  std::set<const Move*> done_;
};

}  // namespace

AppliedMoves apply_moves(const ConfigState& state, const std::vector<Move>& moves) {
  AppliedMoves out;
  out.decisions = state.generated;
  std::map<std::string, std::vector<const Move*>> by_method;
  for (const Move& m : moves)
    if (!m.human && m.relpath == state.relpath) by_method[method_of(m.base)].push_back(&m);
  for (const auto& [method, ms] : by_method) MethodMoves(state, method, ms, out).apply();
  return out;
}

}  // namespace ootci
