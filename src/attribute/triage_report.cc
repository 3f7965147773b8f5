#include "attribute/triage_report.h"

#include <fmt/format.h>

#include <optional>
#include <set>

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

// A staged run's wave 2: its tests, and those of them newly failing.
struct Wave2 {
  bool ran = false;
  std::string why;
  size_t tests = 0;
  std::vector<std::string> failing;
};

std::optional<Wave2> wave2_of(const AttributionInput& in, const AttributionContext& ctx) {
  const nlohmann::json& s = ctx.second_stage;
  if (!s.is_object() || !s.contains("tests") || !s["tests"].is_array()) return std::nullopt;
  Wave2 w;
  w.ran = s.value("ran", false);
  w.why = s.contains("why") && s["why"].is_string() ? s["why"].get<std::string>() : "";
  std::set<std::string> tests;
  for (const auto& t : s["tests"])
    if (t.is_string()) tests.insert(t.get<std::string>());
  w.tests = tests.size();
  for (const auto& id : in.newly_failing)
    if (tests.count(id)) w.failing.push_back(id);
  return w;
}

// One sentence for people: whether wave 2 ran, why, and what it found.
std::string wave2_sentence(const Wave2& w) {
  if (!w.ran)
    return fmt::format(
        "Wave 2 ({} tests that reach the change only while generating inputs) did not run: {}.",
        w.tests, w.why);
  return fmt::format(
      "Wave 2 ({} tests that reach the change only while generating inputs) ran because wave 1 "
      "raised ({}); {} of its tests fail newly.",
      w.tests, w.why, w.failing.size());
}

// The attribution's summary, then what wave 2 did.
std::string with_wave2(std::string summary, const std::optional<Wave2>& wave2) {
  if (!wave2) return summary;
  if (!summary.empty() && summary.back() != '.') summary += '.';
  return summary + (summary.empty() ? "" : " ") + wave2_sentence(*wave2);
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
  std::optional<Wave2> wave2 = wave2_of(in, ctx);
  if (wave2) {
    nlohmann::json examples = nlohmann::json::array();
    for (size_t i = 0; i < wave2->failing.size() && i < 5; ++i)
      examples.push_back(wave2->failing[i]);
    evidence.push_back({{"kind", "wave 2"},
                        {"ran", wave2->ran},
                        {"why", truncate_utf8(wave2->why, 300)},
                        {"tests", wave2->tests},
                        {"newly_failing", wave2->failing.size()},
                        {"examples", examples}});
  }
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
      {"category", to_string(a.category)},
      {"confidence", to_string(a.confidence)},
      {"summary", truncate_utf8_chars(with_wave2(a.summary, wave2), kMaxTriageSummaryChars)},
      {"suspected_upstream", nullptr},
      {"culprit", a.culprit && a.target ? commit_json(*a.culprit, *a.target) : nlohmann::json()},
      {"evidence", evidence},
      {"analyzer", "ootci"},
      {"probes", a.bisection_probes},
      {"probe_bound", a.range.empty() ? 0 : bisection_bound(a.range.size()) + 2},
      {"executions", a.executions},
      {"primary_executions", ctx.primary_executions},
  };
  if (a.category == Category::kUpstream && a.target) {
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
  out += fmt::format("**{}** ({} confidence): {}\n\n", to_string(a.category),
                     to_string(a.confidence), a.summary);
  if (std::optional<Wave2> wave2 = wave2_of(in, ctx)) out += wave2_sentence(*wave2) + "\n\n";
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
