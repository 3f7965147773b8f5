#pragma once
// The relay store's shared state: what every replica must see alike to act once between them
// (periodic jobs, webhook redeliveries, CRCR's rate limit) and small shared values.
#include <cstdint>
#include <optional>
#include <string>

#include "sql/sql_db.h"

namespace ootci {

class SharedState {
 public:
  explicit SharedState(SqlDb& db) : db_(db) {}

  // A periodic job that one replica runs at a time: true (and recorded) for the first caller
  // once `interval_ms` has passed since the last run named `name`, false for every other.
  bool run_due(const std::string& name, int64_t now_ms, int64_t interval_ms);
  // Claims the redelivery of one GitHub webhook delivery (by its X-GitHub-Delivery guid): true
  // unless it was requested less than min_gap_ms ago or max_attempts times already, so replicas
  // and passes do not ask for one delivery twice.
  bool claim_redelivery(const std::string& guid, int64_t now_ms, int64_t min_gap_ms,
                        int max_attempts);

  // CRCR's per-key sliding window of `window_s` seconds, kept in the store so every replica
  // enforces one limit; its hits are counted per whole second, so a window's cost does not grow
  // with the limit. Returns 0 and counts the request if fewer than `limit` were counted in the
  // window; otherwise the seconds until a slot frees up (at least 1), counting nothing: a client
  // that backs off by Retry-After gets in as soon as it may.
  int64_t rate_limit(const std::string& key, int64_t now_ms, int limit, int64_t window_s);

  // Small shared values, e.g. the sweeper's heartbeat, visible to every replica.
  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> get_meta(const std::string& key);

 private:
  SqlDb& db_;
};

}  // namespace ootci
