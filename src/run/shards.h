#pragma once
// Splitting a plan into N shards of about equal expected time (docs/run.md, "Shards").
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ootci {

// What a shard runs: a plan file's relpath (the whole file) or a test id ("relpath::Class::name").
struct ShardUnit {
  std::string name;
  std::optional<double> seconds;  // mean recorded duration; nullopt without history
};

struct Shard {
  std::vector<std::string> units;  // sorted by name
  double expected_s = 0;           // the sum over its units with history
  size_t without_history = 0;
};

// Longest-processing-time first: units with history, longest first (ties by name), each to the
// shard with the least expected time so far (ties: fewer units, then the lower index, so no shard
// stays empty while there are at least as many units as shards). Units without history then
// go round-robin, by name, starting with the least loaded shard. The same units in any order
// give the same assignment. Throws Error when count < 1.
std::vector<Shard> assign_shards(const std::vector<ShardUnit>& units, int count);

enum class ShardBy { kFile, kTest };

// The units for plan files, given mean durations per test id (EvidenceStore::test_durations).
// kFile: each file, timed by the sum over its tests. kTest: the test ids evidence knows for
// files with history, and whole files for the rest. Tests of files outside `files` are ignored.
std::vector<ShardUnit> shard_units(const std::vector<std::string>& files,
                                   const std::map<std::string, double>& test_durations, ShardBy by);

// The file a unit belongs to: "test/a.py::TestA::test_x" -> "test/a.py".
std::string unit_file(const std::string& unit);

}  // namespace ootci
