#pragma once
// Splitting a plan into N shards of about equal expected time (docs/run.md, "Shards").
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// "K/N" with 1 <= K <= N, as --shard takes it; Error naming `flag` and the expected form.
std::pair<int, int> parse_shard(const std::string& text, std::string_view flag = "--shard");

// Part K of N of every file's variants (`ootci discover --shard K/N`, docs/select.md "Sharded
// discovery"). Variants are known only once pytest collects a file, so the test process decides:
// a test `placed` names goes to that part, any other to part crc32(test id) % N + 1
// (run_reporter.py). Every machine that collects the same file thus splits it alike, with no
// list to share beyond the placement, which comes from the same evidence.
struct VariantPart {
  int k = 0, n = 0;                   // n == 0: whole files
  std::map<std::string, int> placed;  // test id -> part (1..N)
  // Of the variants placed in part K: test id -> the worker (1..W) of this machine's run that
  // runs it (OOTCI_RUN_SUBPART); the rest of a file's variants go by the hash.
  std::map<std::string, int> placed_among_workers;
};

// Places the tests of `files` whose mean duration `durations` records (a previous discovery's
// evidence) by assign_shards, longest first into the part with the least expected time.
// Tests it does not know are left to the hash: their estimate is the same for each, so an even
// split by count is the balance it can give.
std::map<std::string, int> place_variants(const std::vector<std::string>& files,
                                          const std::map<std::string, double>& durations, int n);

// The variants `placed` in part `k`, placed again among a machine's `workers` by the same rule,
// so that the workers sharing a file (a discovery's) end together: split by the hash, a shard of
// test_ops.py ended one worker's share minutes before the other's. Empty for one worker.
std::map<std::string, int> place_among_workers(const std::map<std::string, int>& placed,
                                               const std::map<std::string, double>& durations,
                                               int k, int workers);

}  // namespace ootci
