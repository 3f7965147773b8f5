#include "attribute/triage_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/callback_caps.h"

namespace ootci {
namespace {

Attribution core_culprit() {
  Attribution a;
  a.category = Category::kUpstream;
  a.confidence = Confidence::kHigh;
  a.summary = "core commit c4 breaks 2 variants";
  a.target = Target::kCore;
  a.culprit = Commit{"c4c4c4c4c4c4c4c4", "Make flip faster (#4242)", 4242};
  a.failing = {"test_a.py::T::test_x", "test_a.py::T::test_y"};
  a.moved = {Target::kBackend, Target::kCore};
  for (int i = 1; i <= 5; ++i) a.range.push_back({fmt::format("c{}", i), "", std::nullopt});
  ProbeStep flake{"flake check", {"b6", "t0", "c5"}, "the run's revisions, 3 reruns", {}, 2};
  flake.outcome.failing = {"test_a.py::T::test_x", "test_a.py::T::test_y"};
  a.steps.push_back(flake);
  a.steps.push_back({"control", {"b0", "t0", "c0"}, "the last green run's revisions", {}, 2});
  ProbeStep bisect{"bisection", {"b0", "t0", "c3"}, "core at c3 (3 of 5)", {}, 2};
  a.steps.push_back(bisect);
  a.bisection_probes = 1;
  a.executions = 9;
  return a;
}

AttributionInput core_input() {
  AttributionInput in;
  in.newly_failing = {"test_a.py::T::test_x", "test_a.py::T::test_y"};
  in.run = {"b6", "t0", "c5"};
  in.green = Combination{"b0", "t0", "c0"};
  return in;
}

TEST(TriageVerdict, CarriesCrcrFieldsTheCulpritAndTheCost) {
  nlohmann::json v = triage_verdict(core_culprit(), core_input(), {"r-2", "r-1", 300, nullptr});
  EXPECT_EQ(v["schema_version"], 1);
  EXPECT_EQ(v["category"], "upstream");
  EXPECT_EQ(v["confidence"], "high");
  EXPECT_EQ(v["analyzer"], "ootci");
  EXPECT_EQ(v["suspected_upstream"]["target"], "core");
  EXPECT_EQ(v["suspected_upstream"]["sha"], "c4c4c4c4c4c4c4c4");
  EXPECT_EQ(v["suspected_upstream"]["pr"], 4242);
  EXPECT_EQ(v["suspected_upstream"]["range"], "c0..c5");
  EXPECT_EQ(v["culprit"]["target"], "core");
  EXPECT_EQ(v["probes"], 1);
  EXPECT_EQ(v["probe_bound"], 5);  // ceil(log2 5) + 2
  EXPECT_EQ(v["executions"], 9);
  EXPECT_EQ(v["primary_executions"], 300);
  const auto& evidence = v["evidence"];
  EXPECT_EQ(evidence[0]["kind"], "newly failing");
  EXPECT_EQ(evidence[0]["green_run"], "r-1");
  EXPECT_EQ(evidence[1]["moved"], (nlohmann::json{"backend", "core"}));
  EXPECT_EQ(evidence[2]["kind"], "flake check");
  EXPECT_EQ(evidence[2]["reproduced"], true);
  EXPECT_EQ(evidence[3]["kind"], "control");
  EXPECT_EQ(evidence[3]["reproduced"], false);
  EXPECT_EQ(evidence.back()["kind"], "bisection");
  EXPECT_EQ(evidence.back()["steps"][0]["sha"], "c3");
}

TEST(TriageVerdict, StaysWithinTheRelaysCaps) {
  Attribution a = core_culprit();
  a.summary = std::string(5000, 'x');
  a.category = Category::kBackend;
  a.target = Target::kBackend;
  for (int i = 0; i < 40; ++i) {
    ProbeStep s{"expansion", {"b", "t", "c"}, std::string(900, 'n'), {}, 1};
    s.outcome.ran = false;
    s.outcome.problem = std::string(2000, 'p');
    a.steps.push_back(s);
  }
  nlohmann::json v = triage_verdict(a, core_input(), {"r-2", "r-1", 1, nullptr});
  EXPECT_LE(v["summary"].get<std::string>().size(), 1000u);
  EXPECT_LE(v["evidence"].size(), 10u);
  EXPECT_LE(v.dump().size(), kMaxTriageBytes);
  EXPECT_TRUE(v["suspected_upstream"].is_null());  // a backend culprit is not upstream's
}

TEST(TriageVerdict, SaysWhetherWave2RanAndWhyAndWhatItFound) {
  AttributionContext ctx{"r-2", "r-1", 300, nullptr};
  ctx.second_stage = {{"tests", {"test_a.py::T::test_y", "test_a.py::T::test_z"}},
                      {"ran", true},
                      {"why", "test_a.py::T::test_x failed with NotImplementedError"}};
  nlohmann::json v = triage_verdict(core_culprit(), core_input(), ctx);
  std::string summary = v["summary"];
  EXPECT_NE(summary.find("core commit c4 breaks 2 variants. Wave 2 (2 tests that reach the change "
                         "only while generating inputs) ran because wave 1 raised "
                         "(test_a.py::T::test_x failed with NotImplementedError); 1 of its tests "
                         "fail newly."),
            std::string::npos)
      << summary;
  const auto& wave2 = v["evidence"][1];
  EXPECT_EQ(wave2["kind"], "wave 2");
  EXPECT_EQ(wave2["ran"], true);
  EXPECT_EQ(wave2["tests"], 2);
  EXPECT_EQ(wave2["newly_failing"], 1);
  EXPECT_EQ(wave2["examples"], nlohmann::json({"test_a.py::T::test_y"}));
  EXPECT_NE(triage_markdown(core_culprit(), core_input(), ctx).find("ran because wave 1 raised"),
            std::string::npos);

  ctx.second_stage["ran"] = false;
  ctx.second_stage["why"] = "no first-stage test failed other than by a mismatch";
  v = triage_verdict(core_culprit(), core_input(), ctx);
  EXPECT_NE(v["summary"].get<std::string>().find(
                "did not run: no first-stage test failed other than by a mismatch."),
            std::string::npos)
      << v["summary"];
  // Not a staged run: nothing about waves.
  v = triage_verdict(core_culprit(), core_input(), {"r-2", "r-1", 300, nullptr});
  EXPECT_EQ(v["summary"], "core commit c4 breaks 2 variants");
  EXPECT_EQ(v["evidence"][1]["kind"], "targets");  // no wave-2 entry before it
}

TEST(TriageMarkdown, TablesTheCombinationsAndTheBisection) {
  std::string md = triage_markdown(core_culprit(), core_input(), {"r-2", "r-1", 300, nullptr});
  EXPECT_NE(md.find("# Attribution of run r-2"), std::string::npos);
  EXPECT_NE(md.find("| core | c0 | c5 | yes |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | control | b0 | t0 | c0 | 2 | 0 | passes |"), std::string::npos) << md;
  EXPECT_NE(md.find("1. core at c3 (3 of 5) passes"), std::string::npos) << md;
  EXPECT_NE(md.find("Culprit: c4c4c4c4c4c4c4c4 Make flip faster (#4242) (PR #4242)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Cost: 9 test executions, 3.0% of the run's 300"), std::string::npos) << md;
}

}  // namespace
}  // namespace ootci
