#include "relay/rate_limit.h"

#include <algorithm>

namespace ootci {

int64_t RateLimiter::acquire(const std::string& key, int64_t now_ms) {
  std::lock_guard lock(mu_);
  std::deque<int64_t>& q = hits_[key];
  while (!q.empty() && q.front() <= now_ms - window_ms_) q.pop_front();
  if (static_cast<int>(q.size()) < limit_) {
    q.push_back(now_ms);
    return 0;
  }
  // Over the limit: the oldest hit in the window leaves it first.
  int64_t wait_ms = q.front() + window_ms_ - now_ms;
  return std::max<int64_t>(1, (wait_ms + 999) / 1000);
}

}  // namespace ootci
