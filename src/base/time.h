#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ootci {

inline int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

inline int64_t now_s() {
  return now_ms() / 1000;
}

inline int64_t steady_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

// RFC 3339 UTC with milliseconds, e.g. 2026-11-29T16:15:03.123Z.
std::string iso8601_utc(int64_t unix_ms);

}  // namespace ootci
