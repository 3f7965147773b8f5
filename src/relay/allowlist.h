#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/yaml_doc.h"

namespace ootci {

// CRCR levels. kNone: not on the allowlist.
enum class Level { kNone = 0, kL1 = 1, kL2 = 2, kL3 = 3, kL4 = 4 };
std::string to_string(Level level);

// The events a repo can take part in (test-infra#8856), as upstream spells them: dispatched
// (pull_request, push) or self-reported (nightly, periodic).
const std::vector<std::string>& participation_events();

struct AllowlistEntry {
  std::string repo;
  Level level = Level::kNone;
  std::vector<std::string> oncalls;
  std::string device;  // L3 only: the suffix of the ciflow/crcr/<device> label
  // The entry's `events:`; empty when it names none, and then the repo takes part in all.
  std::vector<std::string> events;
  bool takes_part_in(const std::string& event) const;
};

// CRCR's .github/allowlist.yml: L1/L2/L4 are lists of `owner/repo` or `owner/repo: oncalls`;
// L3 maps device → repo → oncalls. Validation follows CRCR, with file:line in every error; what
// CRCR lets pass (unknown top-level keys, spaces or slashes around a name) is a warning.
// Participation: where oncalls go, a mapping {oncalls: ..., events: [nightly]} may stand, so a
// nightly-only backend gets no pull_request dispatch. An unknown event name is an error.
class Allowlist {
 public:
  static Allowlist parse(const YamlDoc& doc);

  const std::vector<AllowlistEntry>& entries() const { return entries_; }
  // Sorted union of every listed repo: the dispatch targets.
  std::vector<std::string> targets() const;
  Level level_of(const std::string& repo) const;
  const AllowlistEntry* find(const std::string& repo) const;
  std::vector<std::string> l3_repos_for_device(const std::string& device) const;
  // What CRCR accepts but a careful author would fix ("file:line:col: path: message").
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<AllowlistEntry> entries_;
  std::vector<std::string> warnings_;
  std::map<std::string, size_t> index_;
};

// Where the allowlist comes from: a file (reloaded when its mtime changes) or an http(s) URL
// (reloaded after a TTL). A GitHub blob URL is read through the contents API, as CRCR does.
// A reload that fails keeps the last good allowlist and logs the error.
class AllowlistSource {
 public:
  AllowlistSource(std::string location, int64_t ttl_s, std::string github_api_url);
  // Throws if no allowlist has ever loaded.
  std::shared_ptr<const Allowlist> get();
  // Loads it again now, whatever the TTL; false (keeping the last good one) when that fails.
  bool reload();
  const std::string& location() const { return location_; }
  // Called after every successful (re)load, under the source's lock.
  void set_on_load(std::function<void(const Allowlist&)> f) { on_load_ = std::move(f); }

 private:
  std::shared_ptr<const Allowlist> load();
  void install(std::shared_ptr<const Allowlist> fresh);  // under mu_
  std::string location_;
  int64_t ttl_s_;
  std::string github_api_url_;
  std::mutex mu_;
  std::shared_ptr<const Allowlist> current_;
  int64_t loaded_at_s_ = 0;
  int64_t mtime_ns_ = -1;
  int64_t checked_at_ms_ = 0;
  std::function<void(const Allowlist&)> on_load_;
  bool fetching_ = false;
};

}  // namespace ootci
