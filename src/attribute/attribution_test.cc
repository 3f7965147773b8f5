#include "attribute/attribution.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>

namespace ootci {
namespace {

// A scripted world: each target has a linear history "<t>0".."<t>N"; `breaks` says whether a
// combination fails (deterministically), `flaky` whether the first run passes anyway.
struct World : Probes {
  std::map<Target, int> length = {{Target::kBackend, 0}, {Target::kTests, 0}, {Target::kCore, 0}};
  std::function<bool(const Combination&)> breaks;
  std::function<bool(const Combination&)> unbuildable = [](const Combination&) { return false; };
  bool flaky = false;  // every failing variant passes on its first rerun
  std::vector<Combination> probed;

  static int index(const std::string& rev) { return std::stoi(rev.substr(1)); }
  static std::string rev(Target t, int i) { return fmt::format("{}{}", target_name(t)[0], i); }

  ProbeOutcome run(const Combination& c, const std::vector<std::string>& ids, int reruns) override {
    probed.push_back(c);
    ProbeOutcome o;
    if (unbuildable(c)) {
      o.ran = false;
      o.problem = "backend build failed";
      return o;
    }
    for (const auto& id : ids) {
      ++o.executions;
      if (flaky) {
        o.flaky.insert(id);
        o.executions += reruns > 0;
      } else if (breaks(c)) {
        o.failing.insert(id);
        o.executions += reruns;
      }
    }
    return o;
  }

  std::vector<Commit> commits_between(Target t, const std::string& from,
                                      const std::string& to) override {
    std::vector<Commit> out;
    for (int i = index(from) + 1; i <= index(to); ++i)
      out.push_back(
          {rev(t, i), fmt::format("commit {}", i), i == 3 ? std::optional<int>(77) : std::nullopt});
    return out;
  }
};

AttributionInput input(const Combination& green, const Combination& run) {
  AttributionInput in;
  in.newly_failing = {"test_a.py::T::test_x", "test_a.py::T::test_y"};
  in.green = green;
  in.run = run;
  return in;
}

TEST(Attribution, OnlyTheBackendMovedFindsItsCommitWithinTheBound) {
  for (int n = 1; n <= 33; ++n) {
    for (int culprit = 1; culprit <= n; ++culprit) {
      World w;
      w.breaks = [&](const Combination& c) { return World::index(c.backend) >= culprit; };
      Attribution a = attribute_failures(
          input({"b0", "t0", "c0"}, {World::rev(Target::kBackend, n), "t0", "c0"}), w);
      ASSERT_EQ(a.category, Category::kBackend) << n << " " << culprit << ": " << a.summary;
      ASSERT_TRUE(a.culprit);
      EXPECT_EQ(a.culprit->sha, World::rev(Target::kBackend, culprit));
      EXPECT_EQ(a.confidence, Confidence::kHigh);
      EXPECT_LE(a.bisection_probes, bisection_bound(n)) << n << " " << culprit;
      EXPECT_EQ(a.range.size(), static_cast<size_t>(n));
    }
  }
}

TEST(Attribution, BisectionBoundIsCeilLog2) {
  EXPECT_EQ(bisection_bound(1), 0);
  EXPECT_EQ(bisection_bound(2), 1);
  EXPECT_EQ(bisection_bound(8), 3);
  EXPECT_EQ(bisection_bound(9), 4);
  EXPECT_EQ(bisection_bound(1000), 10);
}

TEST(Attribution, CoreCulpritWhenBothMovedBlamesUpstreamNotTheBackend) {
  World w;
  w.breaks = [](const Combination& c) { return World::index(c.core) >= 4; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b6", "t0", "c5"}), w);
  EXPECT_EQ(a.category, Category::kUpstream) << a.summary;
  ASSERT_TRUE(a.target);
  EXPECT_EQ(*a.target, Target::kCore);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->sha, "c4");
  EXPECT_EQ(a.moved, (std::vector<Target>{Target::kBackend, Target::kCore}));
  // control, one expansion per moved target, then the bisection of 5 commits.
  EXPECT_EQ(a.steps[1].kind, "control");
  EXPECT_EQ(a.steps[2].note, "only backend advanced");
  EXPECT_FALSE(a.steps[2].failed());
  EXPECT_EQ(a.steps[3].note, "only core advanced");
  EXPECT_TRUE(a.steps[3].failed());
  // Bisection probes keep the backend at its green revision.
  for (size_t i = 4; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].combination.backend, "b0");
  EXPECT_LE(a.bisection_probes, bisection_bound(5));
}

TEST(Attribution, BackendCulpritWhenBothMoved) {
  World w;
  w.breaks = [](const Combination& c) { return World::index(c.backend) >= 2; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b6", "t3", "c5"}), w);
  EXPECT_EQ(a.category, Category::kBackend);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->sha, "b2");
}

TEST(Attribution, TestsCulpritCarriesThePrNumber) {
  World w;
  w.breaks = [](const Combination& c) { return World::index(c.tests) >= 3; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b0", "t4", "c0"}), w);
  EXPECT_EQ(a.category, Category::kUpstream);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->pr, 77);
  EXPECT_NE(a.summary.find("(PR #77)"), std::string::npos) << a.summary;
}

TEST(Attribution, FailuresThatPassOnARerunAreAFlake) {
  World w;
  w.flaky = true;
  w.breaks = [](const Combination&) { return true; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b3", "t0", "c0"}), w);
  EXPECT_EQ(a.category, Category::kFlake);
  EXPECT_EQ(a.confidence, Confidence::kHigh);
  EXPECT_EQ(a.flaky.size(), 2u);
  EXPECT_EQ(w.probed.size(), 1u);  // no bisection for a flake
}

TEST(Attribution, FailingAtTheGreenRevisionsIsInfra) {
  World w;
  w.breaks = [](const Combination&) { return true; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b3", "t0", "c0"}), w);
  EXPECT_EQ(a.category, Category::kInfra);
  EXPECT_EQ(a.confidence, Confidence::kHigh);
  EXPECT_EQ(a.steps.back().kind, "control");
}

TEST(Attribution, NothingMovedAndStillFailingIsInfra) {
  World w;
  w.breaks = [](const Combination&) { return true; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b0", "t0", "c0"}), w);
  EXPECT_EQ(a.category, Category::kInfra);
  EXPECT_EQ(w.probed.size(), 1u);
}

TEST(Attribution, ABuildThatFailsAtEveryRevisionIsInfra) {
  World w;
  w.breaks = [](const Combination&) { return false; };
  w.unbuildable = [](const Combination&) { return true; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b2", "t0", "c0"}), w);
  EXPECT_EQ(a.category, Category::kInfra);
  EXPECT_NE(a.summary.find("backend build failed"), std::string::npos) << a.summary;
}

TEST(Attribution, ABuildBrokenByACommitIsThatCommit) {
  World w;
  w.breaks = [](const Combination&) { return false; };
  w.unbuildable = [](const Combination& c) { return World::index(c.backend) >= 5; };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b7", "t0", "c0"}), w);
  EXPECT_EQ(a.category, Category::kBackend);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->sha, "b5");
}

TEST(Attribution, AnInteractionBisectsTheTargetWhoseRevertFixesIt) {
  World w;
  w.breaks = [](const Combination& c) {
    return World::index(c.backend) >= 3 && World::index(c.core) >= 1;
  };
  Attribution a = attribute_failures(input({"b0", "t0", "c0"}, {"b4", "t0", "c2"}), w);
  EXPECT_EQ(a.category, Category::kBackend) << a.summary;
  EXPECT_EQ(a.confidence, Confidence::kMedium);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->sha, "b3");
}

TEST(Attribution, TheBudgetLeavesTheRemainingCandidates) {
  World w;
  w.breaks = [](const Combination& c) { return World::index(c.backend) >= 20; };
  AttributionInput in = input({"b0", "t0", "c0"}, {"b64", "t0", "c0"});
  in.max_probes = 3;  // control + 2 bisection probes: 64 -> 16 candidates
  Attribution a = attribute_failures(in, w);
  EXPECT_EQ(a.category, Category::kBackend);
  EXPECT_FALSE(a.culprit);
  EXPECT_EQ(a.remaining.size(), 16u);
  EXPECT_EQ(a.confidence, Confidence::kMedium);
}

TEST(Attribution, RunsWithoutRecordedRevisionsAreUnknownNotInfra) {
  World w;
  w.breaks = [](const Combination&) { return true; };
  AttributionInput in = input({}, {});
  in.revisions_recorded = false;
  Attribution a = attribute_failures(in, w);
  EXPECT_EQ(a.category, Category::kUnknown);
  EXPECT_NE(a.summary.find("do not record their target revisions"), std::string::npos);
  EXPECT_EQ(w.probed.size(), 1u);  // the flake check only
}

TEST(Attribution, NothingNewlyFailingOrNoGreenRunIsUnknown) {
  World w;
  w.breaks = [](const Combination&) { return true; };
  AttributionInput in = input({"b0", "t0", "c0"}, {"b1", "t0", "c0"});
  in.newly_failing.clear();
  EXPECT_EQ(attribute_failures(in, w).category, Category::kUnknown);
  in = input({"b0", "t0", "c0"}, {"b1", "t0", "c0"});
  in.green.reset();
  Attribution a = attribute_failures(in, w);
  EXPECT_EQ(a.category, Category::kUnknown);
  EXPECT_EQ(a.failing.size(), 2u);
}

}  // namespace
}  // namespace ootci
