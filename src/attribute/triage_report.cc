#include "attribute/triage_report.h"

#include <fmt/format.h>

#include "base/callback_caps.h"
#include "base/text.h"
#include "base/utf8.h"

namespace ootci {
namespace {

std::string short_sha_or_dash(const std::string& sha) {
  return sha.empty() ? "-" : short_sha(sha);
}

nlohmann::json commit_json(const Commit& c, Target t) {
  return {{"target", target_name(t)},
          {"sha", c.sha},
          {"subject", truncate_utf8(c.subject, 200)},
          {"pr", c.pr ? nlohmann::json(*c.pr) : nlohmann::json()}};
}

nlohmann::json combination_json(const Combination& c) {
  return {{"backend", c.backend}, {"tests", c.tests}, {"core", c.core}};
}

nlohmann::json step_json(const ProbeStep& s) {
  nlohmann::json j = {{"kind", s.kind},
                      {"what", s.note},
                      {"revisions", combination_json(s.combination)},
                      {"variants", s.probed},
                      {"failing", s.outcome.failing.size()},
                      {"flaky", s.outcome.flaky.size()},
                      {"reproduced", s.failed()}};
  if (!s.outcome.ran) j["problem"] = truncate_utf8(s.outcome.problem, 300);
  return j;
}

double share(int part, int whole) {
  return whole > 0 ? 100.0 * part / whole : 0;
}

}  // namespace

nlohmann::json triage_verdict(const Attribution& a, const AttributionInput& in,
                              const AttributionContext& ctx) {
  nlohmann::json evidence = nlohmann::json::array();
  nlohmann::json failing = nlohmann::json::array();
  for (size_t i = 0; i < a.failing.size() && i < 5; ++i) failing.push_back(a.failing[i]);
  evidence.push_back({{"kind", "newly failing"},
                      {"green_run", ctx.green_run_id},
                      {"count", in.newly_failing.size()},
                      {"deterministic", a.failing.size()},
                      {"flaky", a.flaky.size()},
                      {"examples", failing}});
  nlohmann::json moved = nlohmann::json::array();
  for (Target t : a.moved) moved.push_back(target_name(t));
  if (in.green)
    evidence.push_back({{"kind", "targets"},
                        {"green", combination_json(*in.green)},
                        {"run", combination_json(in.run)},
                        {"moved", moved}});
  // The bisection's probes are one entry below, so the combinations fit the relay's 10.
  for (const auto& s : a.steps)
    if (s.kind != "bisection" && evidence.size() + 1 < kMaxTriageEvidence)
      evidence.push_back(step_json(s));
  if (a.target && !a.range.empty()) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : a.steps)
      if (s.kind == "bisection")
        steps.push_back({{"sha", s.combination.at(*a.target)}, {"reproduced", s.failed()}});
    evidence.push_back(
        {{"kind", "bisection"},
         {"target", target_name(*a.target)},
         {"range", fmt::format("{}..{}", in.green->at(*a.target), in.run.at(*a.target))},
         {"commits", a.range.size()},
         {"probes", a.bisection_probes},
         {"steps", steps},
         {"culprit", a.culprit ? nlohmann::json(a.culprit->sha) : nlohmann::json()},
         {"remaining", a.remaining}});
  }

  nlohmann::json v = {
      {"schema_version", 1},
      {"category", a.category},
      {"confidence", a.confidence},
      {"summary", truncate_utf8_chars(a.summary, kMaxTriageSummaryChars)},
      {"suspected_upstream", nullptr},
      {"culprit", a.culprit && a.target ? commit_json(*a.culprit, *a.target) : nlohmann::json()},
      {"evidence", evidence},
      {"analyzer", "ootci"},
      {"probes", a.bisection_probes},
      {"probe_bound", a.range.empty() ? 0 : bisection_bound(a.range.size()) + 2},
      {"executions", a.executions},
      {"primary_executions", ctx.primary_executions},
  };
  if (a.category == "upstream" && a.target) {
    nlohmann::json s = {
        {"target", target_name(*a.target)},
        {"range", fmt::format("{}..{}", in.green->at(*a.target), in.run.at(*a.target))}};
    if (a.culprit) s.update(commit_json(*a.culprit, *a.target));
    v["suspected_upstream"] = s;
  }
  // Only the examples and per-step details can grow; drop them until the relay's cap holds.
  while (v.dump().size() > kMaxTriageBytes && v["evidence"].size() > 1)
    v["evidence"].erase(v["evidence"].size() - 1);
  return v;
}

std::string triage_markdown(const Attribution& a, const AttributionInput& in,
                            const AttributionContext& ctx) {
  std::string out = fmt::format("# Attribution of run {}\n\n", ctx.run_id);
  out += fmt::format("**{}** ({} confidence): {}\n\n", a.category, a.confidence, a.summary);
  if (in.green) {
    out += fmt::format(
        "Last green run: {}\n\n| target | green | this run | moved |\n|---|---|---|---|\n",
        ctx.green_run_id);
    for (Target t : all_targets()) {
      bool moved = std::find(a.moved.begin(), a.moved.end(), t) != a.moved.end();
      out +=
          fmt::format("| {} | {} | {} | {} |\n", target_name(t), short_sha_or_dash(in.green->at(t)),
                      short_sha_or_dash(in.run.at(t)), moved ? "yes" : "no");
    }
    out += "\n";
  }
  out += fmt::format("Newly failing variants: {} ({} kept failing, {} flaky)\n",
                     in.newly_failing.size(), a.failing.size(), a.flaky.size());
  for (const auto& id : a.failing) out += fmt::format("- {}\n", id);
  for (const auto& id : a.flaky) out += fmt::format("- {} (flaky)\n", id);
  out +=
      "\n## Combinations\n\n| # | probe | backend | tests | core | variants | failing | result | "
      "what |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const ProbeStep& s = a.steps[i];
    std::string result = !s.outcome.ran ? "not run: " + s.outcome.problem
                         : s.failed()   ? "fails"
                                        : "passes";
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i + 1, s.kind,
        short_sha_or_dash(s.combination.backend), short_sha_or_dash(s.combination.tests),
        short_sha_or_dash(s.combination.core), s.probed, s.outcome.failing.size(), result, s.note);
  }
  if (a.target && !a.range.empty()) {
    out += fmt::format("\n## Bisection of {} ({} commits, {} probes; at most {} allowed)\n\n",
                       target_name(*a.target), a.range.size(), a.bisection_probes,
                       bisection_bound(a.range.size()) + 2);
    int step = 0;
    for (const auto& s : a.steps)
      if (s.kind == "bisection")
        out += fmt::format("{}. {} {}\n", ++step, s.note, s.failed() ? "fails" : "passes");
    if (a.culprit) {
      out += fmt::format("\nCulprit: {} {}", a.culprit->sha, a.culprit->subject);
      if (a.culprit->pr) out += fmt::format(" (PR #{})", *a.culprit->pr);
      out += "\n";
    } else if (!a.remaining.empty()) {
      out += fmt::format("\nThe budget ran out; {} candidates remain:\n", a.remaining.size());
      for (const auto& sha : a.remaining) out += fmt::format("- {}\n", sha);
    }
  }
  out += fmt::format("\nCost: {} test executions, {:.1f}% of the run's {}\n", a.executions,
                     share(a.executions, ctx.primary_executions), ctx.primary_executions);
  return out;
}

}  // namespace ootci
