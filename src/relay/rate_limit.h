#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace ootci {

// CRCR's per-repo sliding 60 s window. Unlike CRCR, rejected requests do not count, so a client
// that backs off by Retry-After gets in as soon as a slot frees up. The window lives in this
// process: with several replicas each enforces the limit on the requests it receives.
class RateLimiter {
 public:
  RateLimiter(int limit_per_window, int64_t window_ms = 60000)
      : limit_(limit_per_window), window_ms_(window_ms) {}
  // 0 if allowed; otherwise the seconds to wait (at least 1).
  int64_t acquire(const std::string& key, int64_t now_ms);

 private:
  int limit_;
  int64_t window_ms_;
  std::mutex mu_;
  std::map<std::string, std::deque<int64_t>> hits_;
};

}  // namespace ootci
