#include "select/waves.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "base/error.h"
#include "select/second_stage.h"

namespace ootci {
namespace {

std::set<std::string> in_plan(const std::set<std::string>& ids, const std::set<std::string>& plan) {
  std::set<std::string> out;
  for (const auto& id : ids)
    if (plan.count(unit_file(id))) out.insert(id);
  return out;
}

// The files that run as one unit: whole ones, and those with bases (whose variants are known
// only once pytest collects them).
std::set<std::string> file_units(const Selection& wave) {
  std::set<std::string> out = wave.files;
  for (const auto& base : wave.bases) out.insert(unit_file(base));
  return out;
}

}  // namespace

Selection wave_of(const Selection& s, int wave, const std::vector<std::string>& plan_files) {
  std::set<std::string> plan(plan_files.begin(), plan_files.end());
  Selection out;
  if (wave == 1) {
    for (const auto& f : s.files)
      if (plan.count(f)) out.files.insert(f);
    out.tests = in_plan(s.tests, plan);
    out.bases = in_plan(s.bases, plan);
    return out;
  }
  if (wave != 2) throw Error(fmt::format("--wave {}: a selection has waves 1 and 2", wave));
  for (const auto& id : in_plan(s.then_tests, plan))
    if (!s.tests.count(id) && !s.files.count(unit_file(id))) out.tests.insert(id);
  return out;
}

bool wave_empty(const Selection& wave) {
  return wave.files.empty() && wave.tests.empty() && wave.bases.empty();
}

std::vector<Shard> wave_shards(const Selection& wave,
                               const std::map<std::string, double>& test_durations, int count) {
  if (count < 1) throw Error(fmt::format("shard count must be at least 1, not {}", count));
  std::set<std::string> whole = file_units(wave);
  std::vector<ShardUnit> units;
  for (const auto& file : whole) {
    std::optional<double> seconds;
    if (wave.files.count(file)) {
      // A whole-file error is recorded under the file's relpath.
      if (auto own = test_durations.find(file); own != test_durations.end()) seconds = own->second;
      auto it = test_durations.lower_bound(file + "::");
      for (; it != test_durations.end() && unit_file(it->first) == file; ++it)
        seconds = seconds.value_or(0) + it->second;
    }
    units.push_back({file, seconds});
  }
  for (const auto& id : wave.tests) {
    if (whole.count(unit_file(id))) continue;
    auto it = test_durations.find(id);
    units.push_back({id, it == test_durations.end() ? std::nullopt : std::optional(it->second)});
  }
  if (units.empty()) return {};
  int shards = static_cast<int>(std::min<size_t>(static_cast<size_t>(count), units.size()));
  return assign_shards(units, shards);
}

Selection shard_selection(const Selection& wave, const Shard& shard) {
  Selection out;
  for (const auto& unit : shard.units) {
    if (unit.find("::") != std::string::npos) {
      out.tests.insert(unit);
      continue;
    }
    if (wave.files.count(unit)) out.files.insert(unit);
    for (const auto& base : wave.bases)
      if (unit_file(base) == unit) out.bases.insert(base);
    for (const auto& id : wave.tests)
      if (unit_file(id) == unit) out.tests.insert(id);
  }
  return out;
}

nlohmann::json decide_wave2(const Selection& selection, const std::vector<std::string>& plan_files,
                            const std::vector<TestResult>& wave1,
                            const std::vector<TestResult>* last_green) {
  Selection two = wave_of(selection, 2, plan_files);
  std::optional<std::string> why;
  if (!two.tests.empty()) why = second_stage_reason(wave1, last_green);
  std::string not_run = two.tests.empty() ? "wave 2 is empty: the selection has no \"then\" "
                                            "tests beyond wave 1's"
                                          : kSecondStageNotCalledFor;
  return {{"tests", two.tests}, {"ran", why.has_value()}, {"why", why.value_or(not_run)}};
}

}  // namespace ootci
