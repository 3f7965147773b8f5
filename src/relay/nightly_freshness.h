#pragma once
// How fresh each backend's nightly is (RFC-0056: a nightly older than 36 h is degraded), for the
// HUD's summary page and /metrics alike.
#include <cstdint>
#include <string>
#include <vector>

#include "relay/allowlist.h"
#include "relay_store/job_store.h"

namespace ootci {

struct NightlyFreshness {
  std::string repo;
  int64_t last_ms = -1;  // the newest nightly or periodic job; -1 when none was ever reported
  bool stale = false;    // none within stale_after_h
};

// Every repo that reported a nightly, and every allowlisted repo whose `events:` name nightly,
// by repo name.
std::vector<NightlyFreshness> nightly_freshness(JobStore& jobs, const Allowlist& allow,
                                                int64_t now_ms, int64_t stale_after_h);

}  // namespace ootci
