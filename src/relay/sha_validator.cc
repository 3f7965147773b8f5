#include "relay/sha_validator.h"

#include <spdlog/spdlog.h>

namespace ootci {

ShaValidator::Result ShaValidator::check(const std::string& sha, int64_t now_s) {
  bool hex = sha.size() >= 7 && sha.size() <= 40 &&
             sha.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) return Result::kUnknown;
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(sha);
    if (it != cache_.end() && now_s < it->second.second)
      return it->second.first ? Result::kValid : Result::kUnknown;
  }
  if (!app_) return Result::kUnchecked;
  HttpResult r = app_->call(upstream_, "GET", "/repos/" + upstream_ + "/commits/" + sha);
  if (r.status == 200 || r.status == 404 || r.status == 422) {
    bool valid = r.status == 200;
    std::lock_guard lock(mu_);
    if (cache_.size() >= 10000) {  // bounded: random SHAs cannot grow it forever
      std::erase_if(cache_, [&](const auto& kv) { return kv.second.second <= now_s; });
      if (cache_.size() >= 10000) cache_.clear();
    }
    cache_[sha] = {valid, now_s + (valid ? 3600 : 300)};
    return valid ? Result::kValid : Result::kUnknown;
  }
  spdlog::warn("SHA lookup for {} failed ({}); accepting unchecked", sha,
               r.status ? "HTTP " + std::to_string(r.status) : r.error);
  return Result::kUnchecked;
}

}  // namespace ootci
