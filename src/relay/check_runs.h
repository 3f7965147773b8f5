#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "relay/allowlist.h"
#include "relay_store/store.h"

namespace ootci {

// CRCR §7: check runs on the upstream PR head for L4 always, and for L3 when the PR carries
// ciflow/crcr/<device> (in the echoed labels, or recorded by a dispatch or labeled webhook).
bool wants_check_run(const AllowlistEntry& entry, const nlohmann::json& echoed_payload,
                     bool wanted_flag);

// `crcr/<owner>/<repo>/<workflow>/<job>`
std::string check_run_name(const JobRecord& job);

// The check_run task for the job's current status; CRCR always creates a new check run, and
// GitHub shows the latest of a name per commit.
TaskItem check_run_task(const JobRecord& job, const std::string& upstream_repo, int64_t now_ms);

}  // namespace ootci
