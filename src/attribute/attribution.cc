#include "attribute/attribution.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/enum_names.h"
#include "base/text.h"

namespace ootci {
namespace {

constexpr EnumName<Category> kCategoryNames[] = {
    {Category::kUpstream, "upstream"}, {Category::kBackend, "backend"}, {Category::kInfra, "infra"},
    {Category::kFlake, "flake"},       {Category::kUnknown, "unknown"},
};
constexpr EnumName<Confidence> kConfidenceNames[] = {
    {Confidence::kHigh, "high"},
    {Confidence::kMedium, "medium"},
    {Confidence::kLow, "low"},
};

}  // namespace

std::string to_string(Category category) {
  return std::string(enum_text(kCategoryNames, category));
}

std::string to_string(Confidence confidence) {
  return std::string(enum_text(kConfidenceNames, confidence));
}

const char* target_name(Target t) {
  switch (t) {
    case Target::kBackend:
      return "backend";
    case Target::kTests:
      return "tests";
    case Target::kCore:
      return "core";
  }
  return "?";
}

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = {Target::kBackend, Target::kTests, Target::kCore};
  return targets;
}

std::string& Combination::at(Target t) {
  return t == Target::kBackend ? backend : t == Target::kTests ? tests : core;
}

const std::string& Combination::at(Target t) const {
  return t == Target::kBackend ? backend : t == Target::kTests ? tests : core;
}

int bisection_bound(size_t n) {
  int probes = 0;
  for (size_t span = 1; span < n; span *= 2) ++probes;
  return probes;
}

namespace {

// The backend is the vendor's; the tests and core are upstream PyTorch's.
Category category_of(Target t) {
  return t == Target::kBackend ? Category::kBackend : Category::kUpstream;
}

std::string describe(const Commit& c) {
  std::string out = short_sha(c.sha);
  if (!c.subject.empty()) out += fmt::format(" \"{}\"", c.subject);
  if (c.pr) out += fmt::format(" (PR #{})", *c.pr);
  return out;
}

// "2 variants (a, b)", "5 variants (a, b and 3 more)": the variants a summary names.
std::string some_of(const std::vector<std::string>& ids) {
  std::string out = fmt::format("{} variant{} (", ids.size(), ids.size() == 1 ? "" : "s");
  size_t shown = std::min<size_t>(ids.size(), 2);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + ids[i];
  if (ids.size() > shown) out += fmt::format(" and {} more", ids.size() - shown);
  return out + ")";
}

class Attributor {
 public:
  Attributor(const AttributionInput& in, Probes& probes) : in_(in), probes_(probes) {}

  Attribution run() {
    if (in_.newly_failing.empty()) {
      a_.summary = "no variant fails that passed in the last green run: nothing to attribute";
      return a_;
    }
    if (!flake_check()) return a_;
    if (!in_.green) {
      a_.summary = fmt::format(
          "{} fail deterministically, but there is no green run of this backend to compare with",
          some_of(a_.failing));
      return a_;
    }
    if (!in_.revisions_recorded) {
      a_.summary = fmt::format(
          "{} fail deterministically, but the runs do not record their target revisions, so "
          "what moved is unknown",
          some_of(a_.failing));
      return a_;
    }
    const Combination& green = *in_.green;
    for (Target t : all_targets())
      if (!green.at(t).empty() && !in_.run.at(t).empty() && green.at(t) != in_.run.at(t))
        a_.moved.push_back(t);
    if (a_.moved.empty()) {
      const ProbeStep& check = a_.steps.back();
      a_.category = Category::kInfra;
      a_.confidence = Confidence::kMedium;
      a_.summary = check.outcome.ran
                       ? fmt::format(
                             "{} fail at the same revisions that were green: "
                             "nothing moved, so the environment did",
                             some_of(a_.failing))
                       : fmt::format(
                             "nothing moved since the last green run, and its revisions cannot "
                             "be materialized now: {}",
                             check.outcome.problem);
      return a_;
    }
    const ProbeStep& control = probe("control", green, "the last green run's revisions");
    if (control.failed()) {
      a_.category = Category::kInfra;
      a_.confidence = Confidence::kHigh;
      a_.summary = control.outcome.ran
                       ? fmt::format(
                             "{} also fail at the last green run's "
                             "revisions: the environment changed, not the code",
                             some_of(a_.failing))
                       : fmt::format(
                             "the last green run's revisions cannot be materialized "
                             "any more: {}",
                             control.outcome.problem);
      return a_;
    }
    find_guilty_target();
    return a_;
  }

 private:
  // Re-runs the newly failing variants at the run's own revisions. False when they all pass
  // (a flake) or nothing is left to do.
  bool flake_check() {
    std::vector<std::string> ids = in_.newly_failing;
    ProbeStep& step =
        record("flake check", in_.run, fmt::format("the run's revisions, {} reruns", in_.reruns),
               ids, probes_.run(in_.run, ids, in_.reruns));
    if (!step.outcome.ran) {
      a_.failing = ids;  // nothing ran: every variant stays a suspect
      return true;
    }
    for (const auto& id : ids)
      (step.outcome.failing.count(id) ? a_.failing : a_.flaky).push_back(id);
    if (!a_.failing.empty()) return true;
    a_.category = Category::kFlake;
    a_.confidence = in_.reruns >= 2 ? Confidence::kHigh : Confidence::kMedium;
    a_.summary = fmt::format(
        "the newly failing {} passed when re-run at the same revisions: a flake", some_of(ids));
    return false;
  }

  void find_guilty_target() {
    const Combination& green = *in_.green;
    if (a_.moved.size() == 1) {
      bisect(a_.moved[0], green);
      return;
    }
    // Several targets moved: which one alone reproduces the failures on the green revisions?
    std::vector<Target> sufficient;
    for (Target t : a_.moved) {
      if (!budget_left()) return out_of_budget();
      Combination c = green;
      c.at(t) = in_.run.at(t);
      if (probe("expansion", c, fmt::format("only {} advanced", target_name(t))).failed())
        sufficient.push_back(t);
    }
    if (sufficient.size() == 1) {
      bisect(sufficient[0], green);
      return;
    }
    if (sufficient.size() > 1) {
      std::string names;
      for (Target t : sufficient)
        names += fmt::format("{}{}", names.empty() ? "" : " and ", target_name(t));
      a_.confidence = Confidence::kMedium;
      a_.summary =
          fmt::format("{} each reproduce the failures alone: more than one culprit", names);
      return;
    }
    // None alone: the failure needs several moves together. Which one, reverted, fixes it?
    for (Target t : a_.moved) {
      if (!budget_left()) return out_of_budget();
      Combination c = in_.run;
      c.at(t) = green.at(t);
      if (!probe("expansion", c, fmt::format("{} reverted", target_name(t))).failed()) {
        bisect(t, in_.run, /*interaction=*/true);
        return;
      }
    }
    a_.summary = "no single moved target explains the failures, alone or reverted";
  }

  // Finds the first commit of `t` between the green and the red revision at which the failures
  // appear, with the other targets as in `base` (where the green revision of `t` passes).
  void bisect(Target t, const Combination& base, bool interaction = false) {
    a_.target = t;
    a_.category = category_of(t);
    const std::string& from = in_.green->at(t);
    const std::string& to = in_.run.at(t);
    std::string why =
        interaction ? fmt::format(" (only together with the other moved targets)") : std::string();
    a_.range = probes_.commits_between(t, from, to);
    if (a_.range.empty()) {
      a_.confidence = Confidence::kMedium;
      a_.summary =
          fmt::format("{} {}..{} breaks {}{}; its commits could not be listed", target_name(t),
                      short_sha(from), short_sha(to), some_of(a_.failing), why);
      return;
    }
    // Invariant: range[good] passes (-1 is `from`), range[bad] fails (the last is `to`).
    long good = -1, bad = static_cast<long>(a_.range.size()) - 1;
    while (bad - good > 1 && budget_left()) {
      long mid = good + (bad - good) / 2;
      Combination c = base;
      c.at(t) = a_.range[mid].sha;
      ++a_.bisection_probes;
      bool failed = probe("bisection", c,
                          fmt::format("{} at {} ({} of {})", target_name(t),
                                      short_sha(a_.range[mid].sha), mid + 1, a_.range.size()))
                        .failed();
      (failed ? bad : good) = mid;
    }
    if (bad - good > 1) {
      for (long i = good + 1; i <= bad; ++i) a_.remaining.push_back(a_.range[i].sha);
      a_.confidence = Confidence::kMedium;
      a_.summary = fmt::format(
          "{} breaks {}{}; the probe budget ran out with {} "
          "candidate commits left",
          target_name(t), some_of(a_.failing), why, a_.remaining.size());
      return;
    }
    a_.culprit = a_.range[bad];
    a_.confidence = interaction ? Confidence::kMedium : Confidence::kHigh;
    a_.summary = fmt::format(
        "{} commit {} breaks {}{}: found among {} commits in {} bisection probes", target_name(t),
        describe(*a_.culprit), some_of(a_.failing), why, a_.range.size(), a_.bisection_probes);
  }

  void out_of_budget() {
    a_.confidence = Confidence::kLow;
    a_.summary = fmt::format("the probe budget ({}) ran out before a target could be blamed",
                             in_.max_probes);
  }

  bool budget_left() const { return probes_used_ < in_.max_probes; }

  const ProbeStep& probe(const std::string& kind, const Combination& c, const std::string& note) {
    ++probes_used_;
    return record(kind, c, note, a_.failing, probes_.run(c, a_.failing, in_.probe_reruns));
  }

  ProbeStep& record(const std::string& kind, const Combination& c, const std::string& note,
                    const std::vector<std::string>& ids, ProbeOutcome outcome) {
    a_.executions += outcome.executions;
    a_.steps.push_back({kind, c, note, std::move(outcome), ids.size()});
    return a_.steps.back();
  }

  const AttributionInput& in_;
  Probes& probes_;
  Attribution a_;
  int probes_used_ = 0;
};

}  // namespace

Attribution attribute_failures(const AttributionInput& input, Probes& probes) {
  return Attributor(input, probes).run();
}

}  // namespace ootci
