#include "relay_store/shared_state.h"

#include <algorithm>

#include "relay_store/store_sql.h"

namespace ootci {

bool SharedState::run_due(const std::string& name, int64_t now_ms, int64_t interval_ms) {
  return db_.exec("run_due",
                  "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                  "value = excluded.value WHERE CAST(meta.value AS BIGINT) <= ?",
                  {"run_due:" + name, std::to_string(now_ms), now_ms - interval_ms}) > 0;
}

bool SharedState::claim_redelivery(const std::string& guid, int64_t now_ms, int64_t min_gap_ms,
                                   int max_attempts) {
  return db_.exec("claim_redelivery",
                  "INSERT INTO redeliveries (guid, requested_ms, attempts) VALUES (?, ?, 1) "
                  "ON CONFLICT (guid) DO UPDATE SET requested_ms = excluded.requested_ms, "
                  "attempts = redeliveries.attempts + 1 WHERE redeliveries.requested_ms <= ? AND "
                  "redeliveries.attempts < ?",
                  {guid, now_ms, now_ms - min_gap_ms, max_attempts}) > 0;
}

int64_t SharedState::rate_limit(const std::string& key, int64_t now_ms, int limit,
                                int64_t window_s) {
  return db_.write("rate_limit", [&](SqlTx& tx) -> int64_t {
    tx.lock(kRateLockKey | stable_hash24(key));
    int64_t now_s = now_ms / 1000;
    tx.exec("DELETE FROM rate_hits WHERE key = ? AND second <= ?", {key, now_s - window_s});
    auto [n, oldest] = *tx.first("SELECT SUM(hits), MIN(second) FROM rate_hits WHERE key = ?",
                                 {key}, [](const SqlRow& r) {
                                   return std::pair{r.i64(0), r.i64(1)};
                                 });
    if (n < limit) {
      tx.exec(
          "INSERT INTO rate_hits (key, second, hits) VALUES (?, ?, 1) "
          "ON CONFLICT (key, second) DO UPDATE SET hits = rate_hits.hits + 1",
          {key, now_s});
      return 0;
    }
    // Over the limit: the oldest second's hits leave the window first.
    return std::max<int64_t>(1, ((oldest + window_s) * 1000 - now_ms + 999) / 1000);
  });
}

void SharedState::set_meta(const std::string& key, const std::string& value) {
  db_.exec("set_meta",
           "INSERT INTO meta (key, value) VALUES (?, ?) "
           "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
           {key, value});
}

std::optional<std::string> SharedState::get_meta(const std::string& key) {
  return db_.first("get_meta", "SELECT value FROM meta WHERE key = ?", {key},
                   [](const SqlRow& r) { return r.text(0); });
}

}  // namespace ootci
