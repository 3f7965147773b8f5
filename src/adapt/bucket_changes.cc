#include "adapt/bucket_changes.h"

#include <fmt/format.h>

#include <filesystem>
#include <ostream>

#include "base/atomic_file.h"
#include "base/time.h"
#include "evidence/evidence_path.h"

namespace ootci {

nlohmann::json bucket_changes_json(const std::string& command, bool written,
                                   const std::vector<BucketChange>& changes, int64_t at_ms) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : changes)
    list.push_back(
        {{"file", c.file}, {"name", c.name}, {"from", c.from}, {"to", c.to}, {"reason", c.reason}});
  return {
      {"command", command}, {"written", written}, {"at", iso8601_utc(at_ms)}, {"changes", list}};
}

void record_bucket_changes(const BackendConfig& backend, const std::string& command, bool written,
                           const std::vector<BucketChange>& changes, std::ostream& err) {
  std::string path = bucket_changes_path(backend);
  try {
    std::filesystem::create_directories(backend.workspace);
    write_file_atomically(path,
                          bucket_changes_json(command, written, changes, now_ms()).dump(2) + "\n");
  } catch (const std::exception& e) {
    err << fmt::format("warning: {}: not written: {}\n", path, e.what());
  }
}

}  // namespace ootci
