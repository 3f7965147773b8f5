#include "select/shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>

#include "base/error.h"

namespace ootci {

std::vector<Shard> assign_shards(const std::vector<ShardUnit>& units, int count) {
  if (count < 1) throw Error(fmt::format("shard count must be at least 1, not {}", count));
  std::vector<ShardUnit> timed, untimed;
  std::set<std::string> seen;
  for (const ShardUnit& u : units) {
    if (!seen.insert(u.name).second) continue;  // the first mention of a unit counts
    (u.seconds ? timed : untimed).push_back(u);
  }
  std::sort(timed.begin(), timed.end(), [](const ShardUnit& a, const ShardUnit& b) {
    if (*a.seconds != *b.seconds) return *a.seconds > *b.seconds;
    return a.name < b.name;
  });
  std::sort(untimed.begin(), untimed.end(),
            [](const ShardUnit& a, const ShardUnit& b) { return a.name < b.name; });

  std::vector<Shard> shards(count);
  // The least loaded shard; on ties the one with fewer units, then the lower index. So an empty
  // shard is filled before a shard of zero-second units gets another, and no shard stays empty
  // while there are at least as many units as shards.
  auto lighter = [&](size_t a, size_t b) {
    if (shards[a].expected_s != shards[b].expected_s)
      return shards[a].expected_s < shards[b].expected_s;
    return shards[a].units.size() < shards[b].units.size();
  };
  auto lightest = [&] {
    size_t best = 0;
    for (size_t i = 1; i < shards.size(); ++i)
      if (lighter(i, best)) best = i;
    return best;
  };
  for (const ShardUnit& u : timed) {
    Shard& s = shards[lightest()];
    s.units.push_back(u.name);
    s.expected_s += *u.seconds;
  }
  std::vector<size_t> order(shards.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), lighter);
  for (size_t i = 0; i < untimed.size(); ++i) {
    Shard& s = shards[order[i % order.size()]];
    s.units.push_back(untimed[i].name);
    ++s.without_history;
  }
  for (Shard& s : shards) std::sort(s.units.begin(), s.units.end());
  return shards;
}

std::string unit_file(const std::string& unit) {
  return unit.substr(0, unit.find("::"));
}

std::vector<ShardUnit> shard_units(const std::vector<std::string>& files,
                                   const std::map<std::string, double>& test_durations,
                                   ShardBy by) {
  std::map<std::string, std::vector<std::pair<std::string, double>>> tests_by_file;
  for (const auto& [id, seconds] : test_durations)
    tests_by_file[unit_file(id)].emplace_back(id, seconds);
  std::vector<ShardUnit> out;
  for (const std::string& file : files) {
    auto it = tests_by_file.find(file);
    if (it == tests_by_file.end()) {
      out.push_back({file, std::nullopt});
    } else if (by == ShardBy::kTest) {
      for (const auto& [id, seconds] : it->second) out.push_back({id, seconds});
    } else {
      double sum = 0;
      for (const auto& [id, seconds] : it->second) sum += seconds;
      out.push_back({file, sum});
    }
  }
  return out;
}

std::pair<int, int> parse_shard(const std::string& text, std::string_view flag) {
  int k = 0, n = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &k, &n, &tail) != 2 || n < 1 || k < 1 || k > n)
    throw Error(fmt::format("{} {}: expected K/N with 1 <= K <= N", flag, text));
  return {k, n};
}

std::map<std::string, int> place_variants(const std::vector<std::string>& files,
                                          const std::map<std::string, double>& durations, int n) {
  std::set<std::string> wanted(files.begin(), files.end());
  std::vector<ShardUnit> units;
  for (const auto& [id, seconds] : durations)
    if (id.find("::") != std::string::npos && wanted.count(unit_file(id)))
      units.push_back({id, seconds});
  std::map<std::string, int> placed;
  std::vector<Shard> parts = assign_shards(units, n);
  for (size_t i = 0; i < parts.size(); ++i)
    for (const auto& id : parts[i].units) placed[id] = static_cast<int>(i) + 1;
  return placed;
}

std::map<std::string, int> place_among_workers(const std::map<std::string, int>& placed,
                                               const std::map<std::string, double>& durations,
                                               int k, int workers) {
  std::map<std::string, int> out;
  if (workers < 2) return out;
  std::vector<ShardUnit> units;
  for (const auto& [id, part] : placed)
    if (part == k) units.push_back({id, durations.at(id)});
  std::vector<Shard> shares = assign_shards(units, workers);
  for (size_t i = 0; i < shares.size(); ++i)
    for (const auto& id : shares[i].units) out[id] = static_cast<int>(i) + 1;
  return out;
}

}  // namespace ootci
