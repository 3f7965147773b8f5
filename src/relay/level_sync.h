#pragma once
// `ootci relay sync-levels`: demotion PRs on the upstream repo, as upstream's
// tools/torchci/crcr_sync_level.py keeps them. For each L3 repo whose level status says "demote",
// a PR from crcr-demotion/<owner>/<repo> moves its allowlist entry to L2 (allowlist_edit.h);
// a PR that conflicts with the base branch is refreshed; a PR whose repo recovered, or left L3,
// is closed. Everything goes through the relay's GitHub App, and the level status is the one the
// relay computes (level_status.h).
#include <map>
#include <string>
#include <vector>

#include "github/app_client.h"
#include "relay/config.h"
#include "relay/level_status.h"
#include "relay_store/store.h"

namespace ootci {

constexpr const char* kDemotionLabel = "crcr-auto-demotion";

// An open PR of the bot labelled crcr-auto-demotion, by the repo its head branch names.
struct OpenDemotionPr {
  std::string repo;
  int64_t number = 0;
  bool conflicted = false;  // GitHub says it cannot be merged into the base branch
};

struct SyncAction {
  enum Kind { kOpen, kRefresh, kClose } kind = kOpen;
  std::string repo;
  int64_t pr = 0;      // refresh and close
  std::string reason;  // close: "is back within its L3 targets", "is no longer at L3 on `main`"
};

// What to do, from the statuses, the L3 repos of the base branch's allowlist and the open PRs.
// Open PRs first (repo order): closed when the repo is not at L3 any more, or when it has a status
// that does not say demote. Then every L3 repo (repo order) whose status says demote: opened
// when it has no PR, refreshed when its PR conflicts. A repo without a status is left alone.
std::vector<SyncAction> plan_level_sync(const std::vector<LevelStatus>& statuses,
                                        const std::vector<std::string>& l3_repos,
                                        const std::vector<OpenDemotionPr>& open,
                                        const std::string& base_branch = "main");

std::string demotion_title(const std::string& repo);
// The criteria missed as a table, the allowlist change, the oncalls cc'd, what closes the PR.
std::string demotion_body(const LevelStatus& status, const std::vector<std::string>& oncalls,
                          const RelayConfig& config);

struct SyncReport {
  std::vector<std::string> done;    // "opened acme/x #12", ...
  std::vector<std::string> failed;  // "acme/x: <why>"
  bool ok() const { return failed.empty(); }
};

// One pass. Every action is tried; one that fails is reported and the others carry on. With
// dry_run the plan is reported and nothing on GitHub changes.
SyncReport sync_levels(GitHubApp& app, Store& store, const RelayConfig& config, int64_t now_ms,
                       bool dry_run = false);

}  // namespace ootci
