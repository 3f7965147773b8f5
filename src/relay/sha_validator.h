#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "github/app_client.h"

namespace ootci {

// Checks that a nightly/periodic SHA exists upstream (GET /repos/{upstream}/commits/{sha}), with
// CRCR's caching: a valid SHA for 1 h, an unknown one for 5 min. Transient errors fail open, so a
// GitHub outage never rejects a backend's results.
class ShaValidator {
 public:
  enum class Result { kValid, kUnknown, kUnchecked };
  ShaValidator(std::shared_ptr<GitHubApp> app, std::string upstream_repo)
      : app_(std::move(app)), upstream_(std::move(upstream_repo)) {}
  Result check(const std::string& sha, int64_t now_s);

 private:
  std::shared_ptr<GitHubApp> app_;
  std::string upstream_;
  std::mutex mu_;
  std::map<std::string, std::pair<bool, int64_t>> cache_;  // sha → (valid, expires_s)
};

}  // namespace ootci
