// Buckets -> config entries: the decisions that reproduce a method's buckets under Spyre's
// matching (docs/select.md, "From variants to config entries"). bucket.cc makes the buckets.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <deque>
#include <functional>
#include <map>

#include "adapt/bucket.h"
#include "base/text.h"

namespace ootci {
namespace {

constexpr size_t kMaxReasonParts = 4;

// One reason for several variants sharing a mode: their causes, most common first.
struct Summary {
  std::string label;
  std::string body;  // causes and the first one's evidence
};

Summary summarize(const std::vector<const Bucket*>& buckets, TestMode mode) {
  struct Part {
    std::string label, text, evidence;
    size_t count = 0, first = 0;
  };
  std::vector<Part> parts;
  std::vector<std::string> missing_ops;
  size_t missing_count = 0, missing_first = 0;
  std::string missing_label, missing_evidence;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = *buckets[i];
    if (b.cause == Cause::kMissingOp && !b.op.empty()) {
      // Every missing op is named, so capability-driven admission can find them in the reason.
      for (const auto& op : aten_ops_in(b.text))
        if (std::find(missing_ops.begin(), missing_ops.end(), op) == missing_ops.end())
          missing_ops.push_back(op);
      if (missing_count++ == 0) {
        missing_first = i;
        missing_label = b.label;
        missing_evidence = b.evidence;
      }
      continue;
    }
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const Part& p) { return p.label == b.label && p.text == b.text; });
    if (it == parts.end()) {
      parts.push_back({b.label, b.text, b.evidence, 1, i});
    } else {
      ++it->count;
    }
  }
  if (missing_count) {
    std::sort(missing_ops.begin(), missing_ops.end());
    parts.push_back(
        {missing_label,
         fmt::format("{} {} not implemented on the device", fmt::join(missing_ops, ", "),
                     missing_ops.size() == 1 ? "is" : "are"),
         missing_evidence, missing_count, missing_first});
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
    if (a.count != b.count) return a.count > b.count;
    return a.first < b.first;
  });
  Summary s;
  s.label = parts.empty() ? to_string(mode) : parts[0].label;
  for (const Part& p : parts)
    if (p.label != s.label) s.label = to_string(mode);
  if (parts.size() == 1) {
    s.body = parts[0].text;
  } else {
    for (size_t i = 0; i < parts.size() && i < kMaxReasonParts; ++i) {
      const Part& p = parts[i];
      s.body +=
          fmt::format("{}{}{} ({} {})", i ? "; " : "", p.label == s.label ? "" : p.label + ": ",
                      p.text, p.count, p.count == 1 ? "variant" : "variants");
    }
    if (parts.size() > kMaxReasonParts)
      s.body += fmt::format("; {} more causes", parts.size() - kMaxReasonParts);
  }
  if (!parts.empty() && !parts[0].evidence.empty()) s.body += " (" + parts[0].evidence + ")";
  return s;
}

// Either framework may read the dtype: the variant's parameters', or the one in its name.
bool may_have_dtype(const VariantEvidence& v, const std::string& dtype) {
  std::vector<std::string> own = split(v.dtype, ',');
  return spyre_dtype(v.name) == dtype || std::find(own.begin(), own.end(), dtype) != own.end();
}

// One variant of a method's pool, with the base it comes from and its bucket.
struct Item {
  const std::string* base;
  const VariantEvidence* v;
  const Bucket* b;
};
using Items = std::vector<const Item*>;

bool failing(const Bucket& b) {
  return b.mode == TestMode::kXfail || b.mode == TestMode::kXfailStrict;
}

// Both frameworks read the dtype: edits on it apply alike (ootci: any of the variant's dtypes;
// Spyre: the dtype in its name).
bool surely_has_dtype(const VariantEvidence& v, const std::string& dtype) {
  std::vector<std::string> own = split(v.dtype, ',');
  return spyre_dtype(v.name) == dtype && std::find(own.begin(), own.end(), dtype) != own.end();
}

TestMode majority(const Items& items) {
  std::map<TestMode, size_t> per_mode;
  for (const Item* i : items) ++per_mode[i->b->mode];
  TestMode best = per_mode.begin()->first;
  for (const auto& [mode, n] : per_mode)
    if (n > per_mode.at(best)) best = mode;  // ties: the first in mode order
  return best;
}

// The one mode `accepts` allows for all of them: theirs when they agree; mandatory_success when
// one is a regression candidate (never demoted: the run is red because of it anyway); skip when
// one crashes or hangs; else xfail, which no pass or failure turns red.
TestMode meet(const Items& items, TestMode otherwise) {
  if (items.empty()) return otherwise;
  auto any = [&](auto pred) { return std::any_of(items.begin(), items.end(), pred); };
  if (any([](const Item* i) { return i->b->cause == Cause::kRegressed; }))
    return TestMode::kMandatorySuccess;
  TestMode first = items[0]->b->mode;
  if (!any([&](const Item* i) { return i->b->mode != first; })) return first;
  if (any([](const Item* i) { return i->b->mode == TestMode::kSkip; })) return TestMode::kSkip;
  return TestMode::kXfail;
}

std::vector<const Bucket*> buckets_of(const Items& items) {
  std::vector<const Bucket*> out;
  for (const Item* i : items) out.push_back(i->b);
  return out;
}

bool all_accept(const Items& items, TestMode mode) {
  return std::all_of(items.begin(), items.end(),
                     [&](const Item* i) { return accepts(*i->b, mode); });
}

// The entries of one method, built step by step (docs/select.md, "From variants to config
// entries"). Every variant starts in the method's unrestricted entry (`routed_`); exact edits take
// out what they can; what is left shares the weakest mode any of them needs.
class MethodEntries {
 public:
  MethodEntries(std::vector<Item> items, std::vector<std::string> bases,
                const std::optional<std::set<std::string>>& global)
      : items_(std::move(items)), bases_(std::move(bases)), global_(global) {
    for (const Item& i : items_)
      if (!i.b->neutral()) active_.push_back(&i);
    routed_ = active_;
  }

  std::vector<NameDecision> build() {
    if (std::all_of(active_.begin(), active_.end(),
                    [](const Item* i) { return i->b->mode == TestMode::kSkip; }))
      return all_skipped();
    place_tolerances();  // 0.
    if (routed_.empty()) return decisions();
    exclude_skipped_dtypes();
    exclude_skipped_ops();
    mode_ = majority(routed_);
    split_uniform_dtypes(mode_);  // 3.
    if (mode_ == TestMode::kMandatorySuccess) exclude_failing_ops();
    exclude_remaining_crashes();
    split_mixed_dtypes();
    keep_dtypes_from_weakening();
    return decisions();
  }

 private:
  // Nothing runs (or nothing ran): one skip entry, no edits.
  std::vector<NameDecision> all_skipped() const {
    std::vector<const Bucket*> all;
    for (const Item* i : active_) all.push_back(i->b);
    if (all.empty())
      for (const Item& i : items_) all.push_back(i.b);
    Summary s = summarize(all, TestMode::kSkip);
    NameDecision d;
    d.mode = TestMode::kSkip;
    d.reason = join_reason(s.label, s.body);
    return named(d);
  }

  // One name per entry: Spyre's checker reports a method listed twice, so a method several
  // classes define is named by its first class, and the reason names the others.
  std::vector<NameDecision> named(const NameDecision& d) const {
    NameDecision out = d;
    out.name = bases_[0];
    if (bases_.size() > 1)
      out.reason += fmt::format("; one entry for {}: Spyre matches the method name only",
                                fmt::join(bases_, " and "));
    return {out};
  }

  Items routed_where(const std::function<bool(const Item*)>& pred) const {
    Items out;
    for (const Item* i : routed_)
      if (pred(i)) out.push_back(i);
    return out;
  }

  std::set<std::string> routed_dtypes(bool unambiguous_only) const {
    std::set<std::string> out;
    for (const Item* i : routed_) {
      if (unambiguous_only) {
        if (std::string d = unambiguous_dtype(*i->v); !d.empty()) out.insert(d);
        continue;
      }
      for (const auto& d : split(i->v->dtype, ',')) out.insert(d);
      if (std::string d = spyre_dtype(i->v->name); !d.empty()) out.insert(d);
    }
    return out;
  }

  std::set<std::string> routed_ops() const {
    std::set<std::string> out;
    for (const Item* i : routed_)
      if (!i->v->op.empty()) out.insert(i->v->op);
    return out;
  }

  void take(const Items& gone, Items& into) {
    for (const Item* i : gone) {
      routed_.erase(std::remove(routed_.begin(), routed_.end(), i), routed_.end());
      into.push_back(i);
    }
  }

  // dtypes.exclude on the unrestricted entry. Every variant either framework would leave out must
  // be safe to skip; those both leave out are gone from it.
  bool exclude_dtype(const std::string& dtype) {
    Items maybe = routed_where([&](const Item* i) { return may_have_dtype(*i->v, dtype); });
    Items surely = routed_where([&](const Item* i) { return surely_has_dtype(*i->v, dtype); });
    if (surely.empty() || !all_accept(maybe, TestMode::kSkip)) return false;
    dtypes_exclude_.insert(dtype);
    take(surely, excluded_);
    return true;
  }

  // ops.exclude, in both spellings (ootci matches the OpInfo name, Spyre the formatted name and
  // what it prefixes). Only when no other op of the entry shares the prefix, so both frameworks
  // leave out exactly the op's variants.
  bool exclude_op(const std::string& op) {
    std::string formatted = formatted_op(op);
    Items members = routed_where([&](const Item* i) { return i->v->op == op; });
    Items collide = routed_where(
        [&](const Item* i) { return i->v->op != op && op_exclusion_covers(formatted, i->v->op); });
    if (members.empty() || !collide.empty() || !all_accept(members, TestMode::kSkip)) return false;
    ops_exclude_.insert(op);
    ops_exclude_.insert(formatted);
    take(members, excluded_);
    return true;
  }

  // 0. Tolerance proposals: a dtype whose variants fail only within tolerance or pass gets a
  // mandatory_success entry of its own whose edits.dtypes.include carries the precision (the
  // greatest any of them needs; it only loosens the passing ones). Where no such entry fits, they
  // run as xfail and the reason says why.
  void place_tolerances() {
    std::set<std::string> dtypes;
    for (const Item* i : routed_)
      if (i->b->cause == Cause::kTolerance) dtypes.insert(i->b->dtype);
    for (const auto& dtype : dtypes) {
      Items members = of_dtype(dtype);
      Items maybe = routed_where([&](const Item* i) { return may_have_dtype(*i->v, dtype); });
      std::string why;
      if (maybe.size() != members.size() || !all_accept(members, TestMode::kMandatorySuccess))
        why = fmt::format("other {} variants of the test fail for other reasons", dtype);
      else if (!may_restrict(dtype, TestMode::kMandatorySuccess))
        why = std::any_of(items_.begin(), items_.end(),
                          [](const Item& i) { return !i.v->op.empty(); })
                  ? fmt::format(
                        "an @ops test: an included {} would reach every op of the test, and a "
                        "precision per op and dtype lives in global.supported_ops, which ootci "
                        "does not write",
                        dtype)
                  : fmt::format("an entry for {} alone would also decide variants of other dtypes",
                                dtype);
      if (!why.empty()) {
        for (const Item* i : members)
          if (i->b->cause == Cause::kTolerance) demote(i, why);
        continue;
      }
      Precision p{0.0, 0.0};
      for (const Item* i : members)
        if (i->b->precision) {
          p.atol = std::max(*p.atol, i->b->precision->atol);
          p.rtol = std::max(*p.rtol, i->b->precision->rtol);
        }
      include_precision_[dtype] = p;
      restricted_dtypes_[TestMode::kMandatorySuccess].insert(dtype);
      take(members, restricted_[TestMode::kMandatorySuccess]);
    }
  }

  // A tolerance proposal no entry can carry: xfail, with the numbers and why.
  void demote(const Item* item, const std::string& why) {
    Bucket b = *item->b;
    b.mode = TestMode::kXfail;
    b.label = to_string(b.mode);
    b.cause = Cause::kNumeric;
    b.text += fmt::format(", but no config entry can carry it ({})", why);
    b.precision.reset();
    items_[static_cast<size_t>(item - items_.data())].b = &demoted_.emplace_back(std::move(b));
  }

  // 1. A dtype whose every variant crashes, hangs or never runs: excluded (Spyre's idiom).
  void exclude_skipped_dtypes() {
    for (const auto& dtype : routed_dtypes(false)) {
      Items members = routed_where([&](const Item* i) { return may_have_dtype(*i->v, dtype); });
      if (std::all_of(members.begin(), members.end(),
                      [](const Item* i) { return i->b->mode == TestMode::kSkip; }))
        exclude_dtype(dtype);
    }
  }

  // 2. The same for an op of an @ops test.
  void exclude_skipped_ops() {
    for (const auto& op : routed_ops()) {
      Items members = routed_where([&](const Item* i) { return i->v->op == op; });
      if (std::all_of(members.begin(), members.end(),
                      [](const Item* i) { return i->b->mode == TestMode::kSkip; }))
        exclude_op(op);
    }
  }

  bool may_restrict(const std::string& dtype, TestMode mode) const {
    std::vector<PoolVariant> pool;
    for (const Item& i : items_) pool.push_back({i.base, i.v, !i.b->neutral()});
    return may_restrict_dtype(pool, dtype, mode, global_);
  }

  // A dtype-restricted entry for the dtype's variants in `mode`, or in xfail when `mode` cannot
  // be restricted and xfail is safe for them; none when that is the unrestricted entry's mode.
  bool restrict_dtype(const std::string& dtype, const Items& members, TestMode mode,
                      TestMode entry_mode) {
    if (!may_restrict(dtype, mode)) {
      if (mode == TestMode::kXfail || !all_accept(members, TestMode::kXfail) ||
          !may_restrict(dtype, TestMode::kXfail))
        return false;
      mode = TestMode::kXfail;
    }
    if (mode == entry_mode) return false;
    restricted_dtypes_[mode].insert(dtype);
    take(members, restricted_[mode]);
    return true;
  }

  Items of_dtype(const std::string& dtype) const {
    return routed_where([&](const Item* i) { return unambiguous_dtype(*i->v) == dtype; });
  }

  // A dtype whose variants all need one mode other than `entry_mode`: its own entry. Returns
  // whether one was made.
  bool split_uniform_dtypes(TestMode entry_mode) {
    bool split = false;
    for (const auto& dtype : routed_dtypes(true)) {
      Items members = of_dtype(dtype);
      TestMode m = meet(members, entry_mode);
      bool uniform = std::all_of(members.begin(), members.end(),
                                 [&](const Item* i) { return i->b->mode == m; });
      if (uniform && m != entry_mode && m != TestMode::kSkip)
        split |= restrict_dtype(dtype, members, m, entry_mode);
    }
    return split;
  }

  // 4. In a passing test, an op that fails in every variant still here: excluded, since a config
  // gives an op no mode of its own; xfailing the whole test would stop guarding its passing ops.
  void exclude_failing_ops() {
    for (const auto& op : routed_ops()) {
      Items members = routed_where([&](const Item* i) { return i->v->op == op; });
      if (std::all_of(members.begin(), members.end(), [](const Item* i) {
            return failing(*i->b) || i->b->mode == TestMode::kSkip;
          }))
        exclude_op(op);
    }
  }

  size_t collateral(const Items& gone) const {
    return std::count_if(gone.begin(), gone.end(),
                         [](const Item* i) { return i->b->mode != TestMode::kSkip; });
  }

  // 5. A crash or hang left in the entry: its dtype or its op is excluded, whichever leaves out
  // fewer variants that would run; else the entry it stays in ends up skip (7.).
  void exclude_remaining_crashes() {
    for (const Item* crash : Items(routed_)) {
      if (crash->b->mode != TestMode::kSkip ||
          std::find(routed_.begin(), routed_.end(), crash) == routed_.end())
        continue;
      std::string dtype = unambiguous_dtype(*crash->v);
      const std::string& op = crash->v->op;
      size_t by_dtype = dtype.empty() ? SIZE_MAX : collateral(of_dtype(dtype));
      size_t by_op = op.empty()
                         ? SIZE_MAX
                         : collateral(routed_where([&](const Item* i) { return i->v->op == op; }));
      if (by_dtype <= by_op && by_dtype != SIZE_MAX && exclude_dtype(dtype)) continue;
      if (by_op != SIZE_MAX) exclude_op(op);
    }
  }

  // 6. A dtype with a variant that cannot run in the entry's mode: its own entry in the mode safe
  // for all its variants (3. made one for every dtype whose variants agree).
  void split_mixed_dtypes() {
    for (const auto& dtype : routed_dtypes(true)) {
      Items members = of_dtype(dtype);
      if (members.empty() || all_accept(members, mode_)) continue;
      TestMode m = meet(members, mode_);
      if (m != TestMode::kSkip) restrict_dtype(dtype, members, m, mode_);
    }
  }

  // 7. When what is left must run weaker than a dtype's variants need (a merge made the entry
  // xfail, or an inseparable crash made it skip), that dtype keeps its own mode in its own entry.
  void keep_dtypes_from_weakening() {
    while (split_uniform_dtypes(meet(routed_, mode_))) {
    }
  }

  // "; all run as xfail: ..." when the entry's mode is not every variant's own.
  std::string conservative_note(const Items& items, TestMode mode) const {
    if (std::all_of(items.begin(), items.end(), [&](const Item* i) { return i->b->mode == mode; }))
      return "";
    std::string why =
        mode == TestMode::kMandatorySuccess
            ? "a regression candidate is never demoted"
            : "a config names no single variant, and no dtype or op edit separates these";
    if (mode == TestMode::kSkip) return "; all skipped: " + why;
    return fmt::format("; all run as {}: {}", to_string(mode), why);
  }

  std::string excluded_part() const {
    if (excluded_.empty()) return "";
    std::vector<std::string> what;
    if (!dtypes_exclude_.empty())
      what.push_back(fmt::format("{} {}", dtypes_exclude_.size() == 1 ? "dtype" : "dtypes",
                                 fmt::join(dtypes_exclude_, ", ")));
    // One spelling per op in the reason: the OpInfo name.
    std::set<std::string> ops;
    for (const Item* i : excluded_)
      if (!i->v->op.empty() && ops_exclude_.count(i->v->op)) ops.insert(i->v->op);
    if (!ops.empty())
      what.push_back(fmt::format("{} {}", ops.size() == 1 ? "op" : "ops", fmt::join(ops, ", ")));
    Summary s = summarize(buckets_of(excluded_), TestMode::kSkip);
    std::string out = fmt::format("; excluded {}: {}", fmt::join(what, " and "), s.body);
    if (collateral(excluded_) > 0)
      out +=
          " (left out rather than run in this entry's mode: a config gives no op or dtype a "
          "mode of its own)";
    return out;
  }

  std::vector<NameDecision> decisions() const {
    std::vector<NameDecision> out;
    for (const auto& [mode, items] : restricted_) {
      NameDecision d;
      d.mode = mode;
      d.dtypes_include.assign(restricted_dtypes_.at(mode).begin(),
                              restricted_dtypes_.at(mode).end());
      for (const auto& dtype : d.dtypes_include)
        if (auto it = include_precision_.find(dtype); it != include_precision_.end())
          d.dtype_precision[dtype] = it->second;
      Summary s = summarize(buckets_of(items), mode);
      d.reason = join_reason(s.label,
                             fmt::format("for {}: {}", fmt::join(d.dtypes_include, ", "), s.body)) +
                 conservative_note(items, mode);
      for (auto& n : named(d)) out.push_back(std::move(n));
    }
    NameDecision head;
    head.mode = meet(routed_, mode_);
    head.dtypes_exclude.assign(dtypes_exclude_.begin(), dtypes_exclude_.end());
    head.ops_exclude.assign(ops_exclude_.begin(), ops_exclude_.end());
    Summary s = summarize(buckets_of(routed_), head.mode);
    head.reason =
        join_reason(s.label, s.body) + conservative_note(routed_, head.mode) + excluded_part();
    if (routed_.empty() && excluded_.empty())
      head.reason = to_string(head.mode) +
                    ": every variant that ran is decided by a dtype entry above; this entry "
                    "decides those no run ran";
    for (auto& n : named(head)) out.push_back(std::move(n));
    return out;
  }

  std::vector<Item> items_;
  std::vector<std::string> bases_;
  std::optional<std::set<std::string>> global_;
  Items active_, routed_, excluded_;
  TestMode mode_ = TestMode::kMandatorySuccess;
  std::set<std::string> dtypes_exclude_, ops_exclude_;
  std::map<TestMode, std::set<std::string>> restricted_dtypes_;
  std::map<TestMode, Items> restricted_;
  std::map<std::string, Precision> include_precision_;  // of a dtype entry: tolerance proposals
  std::deque<Bucket> demoted_;                          // stable: items point at them
};

}  // namespace

bool accepts(const Bucket& b, TestMode mode) {
  if (b.cause == Cause::kRegressed) return mode == TestMode::kMandatorySuccess;
  if (mode == b.mode || mode == TestMode::kSkip) return true;
  return mode == TestMode::kXfail && b.mode != TestMode::kSkip;
}

bool may_restrict_dtype(const std::vector<PoolVariant>& pool, const std::string& dtype,
                        TestMode mode, const std::optional<std::set<std::string>>& global_dtypes) {
  auto active = [&](auto pred) {
    return std::any_of(pool.begin(), pool.end(),
                       [&](const PoolVariant& p) { return p.active && pred(*p.v); });
  };
  if (global_dtypes) {
    // Spyre falls back to the global dtypes for an unrestricted entry, so a variant without a
    // dtype in its name would get the first entry, the restricted one (and so would one with
    // several dtypes in ootci's plan, which routes only a single recorded dtype); an include
    // outside the global dtypes would create variants that were never created.
    if (!global_dtypes->count(dtype)) return false;
    if (active([](const VariantEvidence& v) {
          return spyre_dtype(v.name).empty() || split(v.dtype, ',').size() != 1;
        }))
      return false;
  }
  if (active([&](const VariantEvidence& v) {
        return unambiguous_dtype(v).empty() && may_have_dtype(v, dtype);
      }))
    return false;
  // An include adds its dtype to every op of an @ops test (ootci), also to ops no run has seen
  // with it: those new variants are only safe as xfail. In a @dtypes test it adds the dtype to
  // every class with the method name that lacks it: not at all, then.
  std::map<std::string, bool> has;  // base -> one of its variants has the dtype
  for (const PoolVariant& p : pool) {
    if (!p.v->op.empty()) return mode == TestMode::kXfail;
    if (p.v->dtype.empty()) continue;
    has[*p.base] |= may_have_dtype(*p.v, dtype);
  }
  return std::all_of(has.begin(), has.end(), [](const auto& h) { return h.second; });
}

std::vector<NameDecision> represent_method(
    const std::vector<const BaseEvidence*>& bases,
    const std::vector<const std::vector<Bucket>*>& buckets,
    const std::optional<std::set<std::string>>& global_dtypes) {
  std::vector<Item> items;
  std::vector<std::string> names;
  for (size_t b = 0; b < bases.size(); ++b) {
    names.push_back(bases[b]->base);
    for (size_t i = 0; i < bases[b]->variants.size(); ++i)
      items.push_back({&bases[b]->base, &bases[b]->variants[i], &(*buckets[b])[i]});
  }
  std::sort(names.begin(), names.end());
  return MethodEntries(std::move(items), std::move(names), global_dtypes).build();
}

std::vector<NameDecision> represent_base(
    const BaseEvidence& base, const std::vector<Bucket>& buckets,
    const std::optional<std::set<std::string>>& global_dtypes) {
  return represent_method({&base}, {&buckets}, global_dtypes);
}

std::vector<NameDecision> represent_file(
    const FileEvidence& file, const std::vector<std::vector<Bucket>>& buckets,
    const std::optional<std::set<std::string>>& global_dtypes) {
  // One pool per method name: Spyre drops the class, so TestA::m and TestB::m share entries.
  std::map<std::string,
           std::pair<std::vector<const BaseEvidence*>, std::vector<const std::vector<Bucket>*>>>
      by_method;
  for (size_t i = 0; i < file.bases.size(); ++i) {
    auto& [bases, of] = by_method[method_of(file.bases[i].base)];
    bases.push_back(&file.bases[i]);
    of.push_back(&buckets[i]);
  }
  std::vector<NameDecision> out;
  for (const auto& [method, pool] : by_method) {
    std::vector<NameDecision> d = represent_method(pool.first, pool.second, global_dtypes);
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

}  // namespace ootci
