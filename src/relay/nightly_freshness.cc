#include "relay/nightly_freshness.h"

#include <algorithm>
#include <map>

namespace ootci {

std::vector<NightlyFreshness> nightly_freshness(JobStore& jobs, const Allowlist& allow,
                                                int64_t now_ms, int64_t stale_after_h) {
  std::map<std::string, int64_t> last = jobs.last_job_ms(JobFilter::kNightly);
  for (const auto& e : allow.entries())
    if (std::find(e.events.begin(), e.events.end(), "nightly") != e.events.end())
      last.emplace(e.repo, -1);
  std::vector<NightlyFreshness> out;
  int64_t limit = now_ms - stale_after_h * 3600000;
  for (const auto& [repo, ms] : last) out.push_back({repo, ms, ms < limit});
  return out;
}

}  // namespace ootci
