#include "base/time.h"

#include <fmt/format.h>

#include <ctime>

namespace ootci {

std::string iso8601_utc(int64_t unix_ms) {
  time_t secs = unix_ms / 1000;
  struct tm tm;
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, unix_ms % 1000);
}

}  // namespace ootci
