#include "select/waves.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"

namespace ootci {
namespace {

const std::vector<std::string> kPlan = {"test/a.py", "test/b.py", "test/c.py"};

std::string id(const std::string& file, int n) {
  return fmt::format("{}::TestX::test_{}", file, n);
}

Selection staged() {
  Selection s;
  s.files = {"test/c.py", "test/gone.py"};
  s.tests = {id("test/a.py", 1), id("test/a.py", 2), id("test/b.py", 1), id("test/gone.py", 1)};
  s.then_tests = {id("test/a.py", 1),  // already in wave 1
                  id("test/a.py", 3), id("test/b.py", 2),
                  id("test/c.py", 9),  // its file runs whole in wave 1
                  id("test/gone.py", 2)};
  return s;
}

TEST(Waves, WaveOneIsTheSelectionAndWaveTwoWhatItDoesNotRunYet) {
  Selection one = wave_of(staged(), 1, kPlan);
  EXPECT_EQ(one.files, (std::set<std::string>{"test/c.py"}));  // not the file outside the plan
  EXPECT_EQ(one.tests,
            (std::set<std::string>{id("test/a.py", 1), id("test/a.py", 2), id("test/b.py", 1)}));
  EXPECT_TRUE(one.then_tests.empty());
  Selection two = wave_of(staged(), 2, kPlan);
  EXPECT_TRUE(two.files.empty());
  EXPECT_EQ(two.tests, (std::set<std::string>{id("test/a.py", 3), id("test/b.py", 2)}));
  EXPECT_THROW(wave_of(staged(), 3, kPlan), Error);

  // A staged selection whose second stage is empty, or a plain one: wave 2 runs nothing.
  Selection plain = staged();
  plain.then_tests.clear();
  EXPECT_TRUE(wave_empty(wave_of(plain, 2, kPlan)));
  EXPECT_FALSE(wave_empty(wave_of(plain, 1, kPlan)));
}

TEST(Waves, MoreShardsThanUnitsGivesOneShardPerUnitAndNoEmptyOne) {
  Selection wave = wave_of(staged(), 2, kPlan);  // two tests
  std::map<std::string, double> durations = {{id("test/a.py", 3), 4.0}};
  std::vector<Shard> shards = wave_shards(wave, durations, 5);
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].units, (std::vector<std::string>{id("test/a.py", 3)}));
  EXPECT_EQ(shards[1].units, (std::vector<std::string>{id("test/b.py", 2)}));
  EXPECT_EQ(shards[1].without_history, 1u);
  EXPECT_TRUE(wave_shards(Selection{}, durations, 3).empty());
  EXPECT_THROW(wave_shards(wave, durations, 0), Error);
}

TEST(Waves, ZeroSecondUnitsStillFillEveryShard) {
  // Skipped tests take no time; before ties went to the fewer units, all three landed in shard 1.
  Selection wave;
  wave.tests = {id("test/a.py", 1), id("test/a.py", 2), id("test/a.py", 3)};
  std::map<std::string, double> durations;
  for (const auto& t : wave.tests) durations[t] = 0.0;
  std::vector<Shard> shards = wave_shards(wave, durations, 3);
  ASSERT_EQ(shards.size(), 3u);
  for (const Shard& s : shards) EXPECT_EQ(s.units.size(), 1u);
}

TEST(Waves, TheShardsAreTheFirstOnesOfTheAssignmentOverTheGivenCount) {
  // A leg given the matrix's (smaller) shard count and one given the count the plan job used run
  // the same tests.
  Selection wave;
  std::map<std::string, double> durations;
  for (int i = 0; i < 7; ++i) {
    wave.tests.insert(id("test/a.py", i));
    if (i % 3) durations[id("test/a.py", i)] = i % 2 ? 0.0 : 1.5 * i;
  }
  std::vector<Shard> fewer = wave_shards(wave, durations, 20);
  ASSERT_EQ(fewer.size(), 7u);
  std::vector<ShardUnit> units;
  for (const auto& t : wave.tests) {
    auto it = durations.find(t);
    units.push_back({t, it == durations.end() ? std::nullopt : std::optional(it->second)});
  }
  std::vector<Shard> all = assign_shards(units, 20);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < fewer.size())
      EXPECT_EQ(all[i].units, fewer[i].units) << i;
    else
      EXPECT_TRUE(all[i].units.empty()) << i;
  }
}

TEST(Waves, WholeFilesAreOneUnitTimedByTheirTestsAndKeepTheirSingleTests) {
  Selection wave;
  wave.files = {"test/a.py"};
  wave.tests = {id("test/a.py", 1), id("test/b.py", 1), id("test/b.py", 2)};
  wave.bases = {"test/c.py::TestX::test_base"};
  std::map<std::string, double> durations = {{id("test/a.py", 1), 2.0},
                                             {id("test/a.py", 2), 3.0},
                                             {"test/a.py", 0.5},  // a whole-file error
                                             {id("test/b.py", 1), 1.0},
                                             {id("test/b.py", 2), 1.0}};
  std::vector<Shard> shards = wave_shards(wave, durations, 2);
  ASSERT_EQ(shards.size(), 2u);
  // a.py (5.5 s) alone; the two b.py tests and c.py's bases (no history) share the other.
  EXPECT_EQ(shards[0].units, (std::vector<std::string>{"test/a.py"}));
  EXPECT_DOUBLE_EQ(shards[0].expected_s, 5.5);
  EXPECT_EQ(shards[1].units,
            (std::vector<std::string>{id("test/b.py", 1), id("test/b.py", 2), "test/c.py"}));

  Selection first = shard_selection(wave, shards[0]);
  EXPECT_EQ(first.files, (std::set<std::string>{"test/a.py"}));
  EXPECT_EQ(first.tests, (std::set<std::string>{id("test/a.py", 1)}));
  Selection second = shard_selection(wave, shards[1]);
  EXPECT_TRUE(second.files.empty());
  EXPECT_EQ(second.tests, (std::set<std::string>{id("test/b.py", 1), id("test/b.py", 2)}));
  EXPECT_EQ(second.bases, (std::set<std::string>{"test/c.py::TestX::test_base"}));
}

TestResult result(const std::string& test_id, Outcome outcome, const std::string& error = "") {
  TestResult r;
  r.test_id = test_id;
  r.outcome = outcome;
  r.error_class = error;
  return r;
}

TEST(Waves, WaveTwoRunsOnlyWhenWaveOneRaisedAsTheRunnerDecides) {
  std::vector<TestResult> mismatch = {
      result(id("test/a.py", 1), Outcome::kPassed),
      result(id("test/a.py", 2), Outcome::kFailed, "AssertionError")};
  nlohmann::json d = decide_wave2(staged(), kPlan, mismatch, nullptr);
  EXPECT_EQ(d["ran"], false);
  EXPECT_EQ(d["why"], "no first-stage test failed other than by a mismatch");
  EXPECT_EQ(d["tests"], nlohmann::json({id("test/a.py", 3), id("test/b.py", 2)}));

  std::vector<TestResult> raised = mismatch;
  raised.push_back(result(id("test/b.py", 1), Outcome::kError, "NotImplementedError"));
  d = decide_wave2(staged(), kPlan, raised, nullptr);
  EXPECT_EQ(d["ran"], true);
  EXPECT_EQ(d["why"], id("test/b.py", 1) + " errored with NotImplementedError") << d.dump();
  // The same raise in the last green run is not news.
  std::vector<TestResult> green = {
      result(id("test/b.py", 1), Outcome::kError, "NotImplementedError")};
  EXPECT_EQ(decide_wave2(staged(), kPlan, raised, &green)["ran"], false);

  // A staged selection whose "then" holds only what wave 1 runs anyway: nothing to decide.
  Selection covered = staged();
  covered.then_tests = {id("test/a.py", 1), id("test/c.py", 4)};
  d = decide_wave2(covered, kPlan, raised, nullptr);
  EXPECT_EQ(d["ran"], false);
  EXPECT_EQ(d["tests"], nlohmann::json::array());
  EXPECT_NE(d["why"].get<std::string>().find("wave 2 is empty"), std::string::npos);
}

}  // namespace
}  // namespace ootci
