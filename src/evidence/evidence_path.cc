#include "evidence/evidence_path.h"

#include <fmt/format.h>

#include <ctime>
#include <random>

namespace ootci {

std::string evidence_path(const BackendConfig& backend) {
  return backend.workspace + "/evidence.db";
}

std::string run_folder(const BackendConfig& backend, const std::string& run_id) {
  return backend.workspace + "/runs/" + run_id;
}

std::string bucket_changes_path(const BackendConfig& backend) {
  return backend.workspace + "/bucket_changes.json";
}

std::string new_run_id(int64_t now_ms) {
  time_t secs = now_ms / 1000;
  struct tm tm;
  gmtime_r(&secs, &tm);
  std::random_device random;
  return fmt::format("r-{:04}{:02}{:02}T{:02}{:02}{:02}Z-{:06x}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, random() & 0xffffff);
}

}  // namespace ootci
