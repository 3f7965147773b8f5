#pragma once
// Temporary demotion, as upstream's relay runs it (aws/lambda/cross_repo_ci_relay/utils/
// demotion.py): while a demotion PR for an L3 repo is open upstream, the relay creates no new
// upstream check runs for the repo, as if it were L2 already. Everything else carries on: PR
// events are still dispatched to it, its results still reach the HUD, and it is still L3.
#include <cstdint>
#include <optional>
#include <string>

#include "github/app_client.h"
#include "relay/allowlist.h"
#include "relay/config.h"
#include "relay_store/level_store.h"

namespace ootci {

// Whether a check run for a job of a repo at `level` is held back. Only for L3, only while a
// demotion is recorded, and only for jobs that started at or after it: a job that started
// before still gets its check run finished, or the one already shown as in progress would hang.
// No start time means now (a job just starting, a label).
bool check_runs_suppressed(Level level, const std::optional<Demotion>& demotion,
                           std::optional<int64_t> job_started_ms);

// The branch of a repo's demotion PR: crcr-demotion/<owner>/<repo>.
std::string demotion_branch(const std::string& repo);

struct ReconcileCounts {
  int open = 0;       // L3 repos with an open demotion PR
  int ended = 0;      // demotions cleared by this pass
  int unchecked = 0;  // repos whose PRs could not be listed (left as they were)
};

// Run by the sweeper (a demotion starts and ends at the next sweep; the store keeps it, so every
// replica agrees): asks GitHub, per L3 repo, whether its demotion PR is open, and records or
// clears the demotion. A demotion ends only after the allowlist was fetched again: if its PR was
// merged the repo is L2 now, but a cached allowlist can still say L3. If that fetch fails the
// demotion stays, and the next sweep tries again.
ReconcileCounts reconcile_demotions(LevelStore& levels, GitHubApp& app, AllowlistSource& allowlist,
                                    const RelayConfig& config, int64_t now_ms);

}  // namespace ootci
