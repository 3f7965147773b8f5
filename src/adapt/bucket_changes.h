#pragma once
// What the last `ootci select propose` or `select rebucket` changed in the test-suite configs (or,
// in a dry run or without --write, proposed), kept in <workspace>/bucket_changes.json for the
// device page (docs/run.md).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

struct BucketChange {
  std::string file;  // the upstream file's relpath
  std::string name;  // the entry or variant, as the command prints it
  std::string from;  // the mode before ("" when added)
  std::string to;    // the mode after ("" when removed)
  std::string reason;
};

nlohmann::json bucket_changes_json(const std::string& command, bool written,
                                   const std::vector<BucketChange>& changes, int64_t at_ms);

// Replaces the record; a workspace that cannot hold it is only warned about on `err`.
void record_bucket_changes(const BackendConfig& backend, const std::string& command, bool written,
                           const std::vector<BucketChange>& changes, std::ostream& err);

}  // namespace ootci
