#include "select/shards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "base/error.h"

namespace ootci {
namespace {

std::vector<ShardUnit> timed_units(int n) {
  std::vector<ShardUnit> out;
  for (int i = 1; i <= n; ++i) out.push_back({"test/test_" + std::to_string(i) + ".py", i * 1.5});
  return out;
}

TEST(Shards, EveryUnitLandsInExactlyOneShard) {
  std::vector<ShardUnit> units = timed_units(37);
  for (int i = 0; i < 11; ++i) units.push_back({"new/test_" + std::to_string(i) + ".py", {}});
  for (int count : {1, 2, 3, 7, 60}) {
    std::vector<Shard> shards = assign_shards(units, count);
    ASSERT_EQ(shards.size(), static_cast<size_t>(count));
    std::multiset<std::string> seen;
    for (const Shard& s : shards) seen.insert(s.units.begin(), s.units.end());
    std::multiset<std::string> want;
    for (const auto& u : units) want.insert(u.name);
    EXPECT_EQ(seen, want) << count << " shards";
  }
}

TEST(Shards, LongestFirstIsBalanced) {
  std::vector<Shard> shards = assign_shards(timed_units(100), 4);
  double total = 0, lo = 1e300, hi = 0;
  for (const Shard& s : shards) {
    total += s.expected_s;
    lo = std::min(lo, s.expected_s);
    hi = std::max(hi, s.expected_s);
    EXPECT_EQ(s.without_history, 0u);
  }
  EXPECT_DOUBLE_EQ(total, 1.5 * 100 * 101 / 2);
  EXPECT_LT(hi / lo, 1.01) << hi << " / " << lo;
}

TEST(Shards, AKnownSmallAssignment) {
  // LPT: 8 -> s1, 7 -> s2, 6 -> s3, 5 -> s3 (6 < 7 < 8), 4 -> s2, 3 -> s1 (8 < 11 = 11).
  std::vector<Shard> s =
      assign_shards({{"a", 3}, {"b", 4}, {"c", 5}, {"d", 6}, {"e", 7}, {"f", 8}}, 3);
  EXPECT_EQ(s[0].units, (std::vector<std::string>{"a", "f"}));
  EXPECT_EQ(s[1].units, (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(s[2].units, (std::vector<std::string>{"c", "d"}));
  EXPECT_DOUBLE_EQ(s[0].expected_s, 11);
  EXPECT_DOUBLE_EQ(s[1].expected_s, 11);
  EXPECT_DOUBLE_EQ(s[2].expected_s, 11);
}

TEST(Shards, UnitsWithoutHistoryGoRoundRobinByName) {
  std::vector<Shard> s = assign_shards({{"e", {}}, {"b", {}}, {"a", {}}, {"d", {}}, {"c", {}}}, 3);
  EXPECT_EQ(s[0].units, (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(s[1].units, (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(s[2].units, (std::vector<std::string>{"c"}));
  EXPECT_EQ(s[0].without_history, 2u);
  EXPECT_EQ(s[2].expected_s, 0);

  // After the timed units, starting with the least loaded shard.
  s = assign_shards({{"big", 10}, {"small", 1}, {"x", {}}, {"y", {}}, {"z", {}}}, 3);
  EXPECT_EQ(s[0].units, (std::vector<std::string>{"big", "z"}));
  EXPECT_EQ(s[1].units, (std::vector<std::string>{"small", "y"}));
  EXPECT_EQ(s[2].units, (std::vector<std::string>{"x"}));
}

TEST(Shards, TheSameInputsGiveTheSameAssignmentInAnyOrder) {
  std::vector<ShardUnit> units = timed_units(50);
  for (int i = 0; i < 20; ++i) units.push_back({"tie/test_" + std::to_string(i) + ".py", 2.0});
  for (int i = 0; i < 9; ++i) units.push_back({"new/test_" + std::to_string(i) + ".py", {}});
  std::vector<Shard> first = assign_shards(units, 5);
  std::mt19937 rng(42);
  for (int round = 0; round < 10; ++round) {
    std::shuffle(units.begin(), units.end(), rng);
    std::vector<Shard> again = assign_shards(units, 5);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(again[i].units, first[i].units);
      EXPECT_DOUBLE_EQ(again[i].expected_s, first[i].expected_s);
    }
  }
}

TEST(Shards, MoreShardsThanUnitsLeavesSomeEmptyAndZeroIsRefused) {
  std::vector<Shard> s = assign_shards({{"a", 1}}, 3);
  EXPECT_EQ(s[0].units, std::vector<std::string>{"a"});
  EXPECT_TRUE(s[1].units.empty());
  EXPECT_THROW(assign_shards({{"a", 1}}, 0), Error);
}

TEST(Shards, UnitsFromPlanFilesAndTestDurations) {
  std::map<std::string, double> durations = {{"test/a.py::TestA::test_x", 1.5},
                                             {"test/a.py::TestA::test_y", 2.5},
                                             {"test/a.py::test_free", 1},
                                             {"test/gone.py::test_old", 9}};
  std::vector<std::string> files = {"test/a.py", "test/b.py"};
  auto names = [](const std::vector<ShardUnit>& units) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& u : units) out.emplace_back(u.name, u.seconds.value_or(-1));
    return out;
  };
  EXPECT_EQ(names(shard_units(files, durations, ShardBy::kFile)),
            (std::vector<std::pair<std::string, double>>{{"test/a.py", 5}, {"test/b.py", -1}}));
  EXPECT_EQ(names(shard_units(files, durations, ShardBy::kTest)),
            (std::vector<std::pair<std::string, double>>{{"test/a.py::TestA::test_x", 1.5},
                                                         {"test/a.py::TestA::test_y", 2.5},
                                                         {"test/a.py::test_free", 1},
                                                         {"test/b.py", -1}}));
  EXPECT_EQ(unit_file("test/a.py::TestA::test_x"), "test/a.py");
  EXPECT_EQ(unit_file("test/a.py"), "test/a.py");
}

TEST(Shards, ParseShardTakesKOfNAndNamesTheFlag) {
  EXPECT_EQ(parse_shard("3/4"), std::make_pair(3, 4));
  EXPECT_EQ(parse_shard("1/1", "--shard"), std::make_pair(1, 1));
  for (const char* bad : {"0/4", "5/4", "1/0", "a/4", "2/4x", "2", ""}) {
    try {
      parse_shard(bad, "--shard");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--shard ") + bad + ": expected K/N with 1 <= K <= N");
    }
  }
}

TEST(Shards, VariantsAreBalancedByTheirDurationsWithinOneFile) {
  std::map<std::string, double> durations = {
      {"test/a.py::T::slow", 9},   {"test/a.py::T::mid", 5},     {"test/a.py::T::quick1", 2},
      {"test/a.py::T::quick2", 2}, {"test/other.py::T::x", 100}, {"test/a.py", 50}};
  std::map<std::string, int> placed = place_variants({"test/a.py"}, durations, 2);
  // Only the file's variants (not another file's, not a whole-file entry), longest first.
  EXPECT_EQ(placed, (std::map<std::string, int>{{"test/a.py::T::slow", 1},
                                                {"test/a.py::T::mid", 2},
                                                {"test/a.py::T::quick1", 2},
                                                {"test/a.py::T::quick2", 2}}));
  EXPECT_TRUE(place_variants({"test/new.py"}, durations, 3).empty());
}

TEST(Shards, APartsVariantsArePlacedAgainAmongTheMachinesWorkers) {
  std::map<std::string, double> durations = {{"t::slow", 9}, {"t::mid", 5}, {"t::q1", 2},
                                             {"t::q2", 2},   {"t::q3", 1},  {"t::other", 30}};
  std::map<std::string, int> placed = {{"t::slow", 1}, {"t::mid", 1}, {"t::q1", 1},
                                       {"t::q2", 1},   {"t::q3", 1},  {"t::other", 2}};
  // Part 1's 19 s between two workers, longest first: 9 | 5 + 2 + 2, then 1 to the first.
  EXPECT_EQ(place_among_workers(placed, durations, 1, 2),
            (std::map<std::string, int>{
                {"t::slow", 1}, {"t::mid", 2}, {"t::q1", 2}, {"t::q2", 2}, {"t::q3", 1}}));
  EXPECT_EQ(place_among_workers(placed, durations, 2, 2),
            (std::map<std::string, int>{{"t::other", 1}}));
  EXPECT_TRUE(place_among_workers(placed, durations, 1, 1).empty());  // one worker: no split
}

}  // namespace
}  // namespace ootci
