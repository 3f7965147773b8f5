#pragma once
// `ootci select rebucket`: moves between buckets from new execution evidence, a normal run of the
// current configs (docs/select.md, "Rebucket"). Failures of mandatory tests are never demoted;
// they are regression candidates for attribution.
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapt/bucket.h"
#include "adapt/decisions.h"
#include "discover/variant_evidence.h"
#include "evidence/evidence_store.h"

namespace ootci {

struct Move {
  enum Kind { kPromote, kAdmit };
  Kind kind = kPromote;
  std::string relpath;
  std::string base;
  std::string test_id;
  std::string variant;  // the variant's method name
  TestMode from = TestMode::kXfail;
  TestMode to = TestMode::kMandatorySuccess;
  std::string reason;  // the new reason
  bool human = false;  // a human-written entry decides it: proposed, never written
};

// A mandatory_success variant that failed in the run: for the attribution step.
struct Regression {
  std::string test_id, base, error_class, message, run_id;
};

// Every mandatory_success result of the run that failed or errored (crashes included), by test id.
std::vector<Regression> regressions_in(const std::string& run_id,
                                       const std::vector<TestResult>& run_results);
// [{test_id, base, error_class, message, run_id}]
nlohmann::json regressions_json(const std::vector<Regression>& regressions);

// A variant's results in the runs up to and including the rebucketed one, newest first (its
// result in that run first).
using HistoryLookup = std::function<std::vector<TestResult>(const TestResult& in_run)>;

// Promotions: every xfail or xfail_strict result of the run that passed, whose last
// `promote_after` results (the run's included) all passed outright. A pass on a rerun is no pass.
std::vector<Move> promotions(const std::vector<TestResult>& run_results,
                             const HistoryLookup& history, int promote_after);

// What the configs say now about one upstream file.
struct ConfigState {
  std::string relpath;
  FileEvidence evidence;                // its variants, with the ops discovery recorded
  std::vector<NameDecision> generated;  // the `# ootci:` names, in file order
  std::vector<Rule> human_rules;
  std::optional<std::set<std::string>> global_dtypes;  // global.supported_dtypes, if any
};

// Capability-driven admission: a variant skipped or xfailed under a reason naming an aten op
// that now has a device kernel is admitted to mandatory_success when every op it recorded has
// one too. Variants already moved (by test id in `taken`) are left out.
std::vector<Move> admissions(const ConfigState& state, const Capabilities& caps,
                             const std::set<std::string>& taken);

// Marks the moves a human-written entry decides (they are printed but never written).
void mark_human(const ConfigState& state, std::vector<Move>& moves);

// The generated names with the file's (non-human) moves applied, as far as a config can name them
// (it names no single variant): an entry whose every variant that ran and that it runs moves the
// same way changes its mode; else the moved variants of a dtype that are all of the dtype's
// variants in the method's unrestricted entry get a dtype-restricted entry, when one decides them
// exactly. Other moves are not written, each with why.
struct AppliedMoves {
  std::vector<NameDecision> decisions;
  size_t written = 0;
  std::vector<std::pair<const Move*, std::string>> not_written;
};
AppliedMoves apply_moves(const ConfigState& state, const std::vector<Move>& moves);

}  // namespace ootci
