// `ootci shards`: the plan's files (or tests) split into shards of equal expected time, from the
// durations in the evidence store (docs/run.md).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "evidence/evidence_path.h"
#include "evidence/evidence_store.h"
#include "plan/backend_config.h"
#include "plan/plan_resolve.h"
#include "select/selection.h"
#include "select/shards.h"
#include "select/waves.h"

namespace ootci {
namespace {

// Mean duration over this many recent results per test.
constexpr int kDurationWindow = 5;

struct ShardsArgs {
  std::string config, evidence, by = "file", select;
  int count = 0;
  bool matrix = false;
};

double rounded(double s) {
  return std::round(s * 10) / 10;
}

// A shard's lines for people: its expected time, its units, and how many have no history.
void print_shard(const std::string& name, const Shard& s) {
  std::cout << fmt::format("{}: {} s expected, {} unit{}", name, rounded(s.expected_s),
                           s.units.size(), s.units.size() == 1 ? "" : "s");
  if (s.without_history) std::cout << fmt::format(" ({} without history)", s.without_history);
  std::cout << "\n";
  for (const auto& u : s.units) std::cout << "  " << u << "\n";
}

// A selection's waves, each split on its own (docs/run.md, "Waves"). The matrix has an entry per
// shard of each wave, with its wave; a wave without tests has none.
void selection_shards(const ShardsArgs& a, const std::vector<std::string>& files,
                      const std::map<std::string, double>& durations) {
  Selection selection = load_selection(a.select);
  nlohmann::ordered_json include = nlohmann::ordered_json::array();
  for (int wave : {1, 2}) {
    Selection part = wave_of(selection, wave, files);
    std::vector<Shard> shards = wave_shards(part, durations, a.count);
    if (!a.matrix) {
      std::string why = wave == 1                      ? "the selection runs nothing"
                        : selection.then_tests.empty() ? "not a staged selection"
                                                       : "its second stage runs nothing new";
      if (shards.empty())
        std::cout << fmt::format("wave {}: no tests ({})\n", wave, why);
      else if (static_cast<int>(shards.size()) < a.count)
        std::cout << fmt::format("wave {}: {} shards (only {} units)\n", wave, shards.size(),
                                 shards.size());
      else
        std::cout << fmt::format("wave {}: {} shards\n", wave, shards.size());
    }
    for (size_t i = 0; i < shards.size(); ++i) {
      if (!a.matrix) {
        print_shard(fmt::format("wave {} shard {}/{}", wave, i + 1, shards.size()), shards[i]);
        continue;
      }
      std::set<std::string> shard_files;
      for (const auto& u : shards[i].units) shard_files.insert(unit_file(u));
      include.push_back({{"wave", wave},
                         {"shard", i + 1},
                         {"shards", shards.size()},
                         {"files", shard_files},
                         {"units", shards[i].units.size()},
                         {"expected_s", rounded(shards[i].expected_s)}});
    }
  }
  if (a.matrix) std::cout << nlohmann::ordered_json{{"include", include}}.dump() << "\n";
}

void shards(const ShardsArgs& a) {
  BackendConfig config = load_backend_or_exit(a.config);
  PlanResult plan = resolve_plan(config);
  for (const auto& e : plan.errors) std::cerr << e << "\n";
  for (const auto& w : plan.warnings) std::cerr << "warning: " << w << "\n";
  if (!plan.ok()) throw ExitStatus{1};
  std::vector<std::string> files;
  for (const auto& f : plan.plan["files"]) files.push_back(f["relpath"].get<std::string>());

  std::string db = a.evidence.empty() ? evidence_path(config) : a.evidence;
  std::map<std::string, double> durations;
  if (std::filesystem::exists(db))
    durations = EvidenceStore::open(db)->test_durations(kDurationWindow);
  if (!a.select.empty()) return selection_shards(a, files, durations);
  ShardBy by = a.by == "test" ? ShardBy::kTest : ShardBy::kFile;
  std::vector<Shard> shards = assign_shards(shard_units(files, durations, by), a.count);

  if (a.matrix) {
    // In the order docs/run.md shows: people read this in CI logs.
    nlohmann::ordered_json include = nlohmann::ordered_json::array();
    for (size_t i = 0; i < shards.size(); ++i) {
      const Shard& s = shards[i];
      // By test, `files` lists each file once and `tests` the ids to run in it; a file without
      // ids in `tests` runs whole.
      std::set<std::string> shard_files;
      std::vector<std::string> tests;
      for (const auto& u : s.units) {
        shard_files.insert(unit_file(u));
        if (u.find("::") != std::string::npos) tests.push_back(u);
      }
      nlohmann::ordered_json entry = {{"shard", i + 1},
                                      {"shards", shards.size()},
                                      {"files", shard_files},
                                      {"expected_s", rounded(s.expected_s)}};
      if (by == ShardBy::kTest) entry["tests"] = tests;
      include.push_back(entry);
    }
    std::cout << nlohmann::ordered_json{{"include", include}}.dump() << "\n";
    return;
  }
  for (size_t i = 0; i < shards.size(); ++i)
    print_shard(fmt::format("shard {}/{}", i + 1, shards.size()), shards[i]);
}

}  // namespace

void add_shards_commands(CLI::App& app) {
  auto* sh =
      app.add_subcommand("shards", "Split the plan's files into shards of equal expected time");
  static ShardsArgs shards_args;
  sh->add_option("--config", shards_args.config, "ootci.yaml")->required();
  sh->add_option("--count", shards_args.count, "number of shards")
      ->required()
      ->check(CLI::PositiveNumber);
  sh->add_flag("--matrix", shards_args.matrix, "print a GitHub Actions strategy.matrix as JSON");
  sh->add_option("--by", shards_args.by, "unit of assignment: file or test (default: file)")
      ->check(CLI::IsMember({"file", "test"}));
  sh->add_option("--evidence", shards_args.evidence,
                 "evidence.db (default: <workspace>/evidence.db)");
  sh->add_option("--select", shards_args.select,
                 "split this selection instead of the plan: each wave of a staged one on its own")
      ->excludes("--by");
  sh->callback([] { shards(shards_args); });
}

}  // namespace ootci
