#pragma once
// `ootci select changed --budget 10%`: keeps the selected tests with the strongest evidence that
// fit in a share of the full plan's test time, and says from history what recall the rest risks
// (docs/select.md, "Budget").
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "select/changed.h"

namespace ootci {

struct BudgetItem {
  std::string id;  // a test id, or the relpath of a file run whole
  Evidence evidence = Evidence::kUnknown;
  int breakages = 0;   // history: how often it went from passing to failing
  double seconds = 0;  // expected test time
};

// Orders `items` strongest evidence first, then those that broke most often before, then the
// cheaper, and returns how many of them, from the front, fit in `budget_seconds`.
size_t items_within_budget(std::vector<BudgetItem>& items, double budget_seconds);

// What the plan costs: the newest finished whole run of this backend and plan config hash (its
// tests and durations), when there is one.
struct PlanRun {
  std::string backend;
  std::string config_hash;
};

// Cuts the selection to `share` (0 < share <= 1) of the plan's test time, with durations and
// breakages from the store's history: what does not fit moves to `dropped`, and
// summary["budget"] says what was kept, what was dropped and the recall it risks. The plan's time
// and each test's are those of the plan's newest run (a test it did not run costs nothing);
// without such a run, each test's mean over its last results in any finished run (discovery
// too, which runs variants the plan skips).
void apply_budget(ChangedSelection& s, const std::vector<PlanFileRef>& plan, EvidenceStore& store,
                  double share, const PlanRun& plan_run = {});

// "10%" or "10" -> 0.10; throws Error naming --budget otherwise.
double parse_budget(const std::string& text);

}  // namespace ootci
