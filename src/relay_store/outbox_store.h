#pragma once
// The relay store's dispatch area: accepted webhooks, their outbox rows (one dispatch to one
// downstream repo, the relay's DISPATCHED record), and L3 check-run wishes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "relay_store/records.h"
#include "sql/sql_db.h"

namespace ootci {

class OutboxStore {
 public:
  explicit OutboxStore(SqlDb& db) : db_(db) {}

  // Commits the delivery, its outbox rows and its check-run wishes in one transaction. Returns
  // false, writing nothing, when the delivery id is already stored (a webhook redelivery).
  bool accept_delivery(const DeliveryRecord& delivery, const std::vector<OutboxItem>& outbox);
  // Without the body (empty) when with_body is false: callbacks need only the commit and PR.
  std::optional<DeliveryRecord> get_delivery(const std::string& delivery_id, bool with_body = true);

  // Leases up to `limit` pending rows that are due at `now_ms`: they are not due again until
  // now_ms + lease_ms, so a crashed worker's rows come back by themselves. Each row carries the
  // claim's lease, a token no other claim (of any replica) gets.
  std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms);
  // Records attempts' outcomes on rows claim_due returned, all in one transaction (a busy
  // dispatcher settles what its workers finished meanwhile in one commit). Each changes its row
  // only while that claim still holds it: a worker whose lease ran out, and whose row another
  // worker took over, changes nothing (false at its index), whatever the other worker did.
  std::vector<bool> settle_outbox(const std::vector<OutboxOutcome>& outcomes);
  // Makes every leased row due now. Only safe when no other process uses the store (SQLite).
  void release_leases(int64_t now_ms);
  // Earliest next_attempt_ms among pending rows, if any.
  std::optional<int64_t> next_due_ms();

  std::vector<OutboxItem> outbox_for(const std::string& delivery_id);
  OutboxCounts outbox_counts();
  // The DISPATCHED record of (delivery, repo): its outbox row.
  std::optional<OutboxItem> dispatch_record(const std::string& delivery_id,
                                            const std::string& repo);

  // L3 "create check runs for this commit" wish (CRCR's crcr:check_run_wanted).
  void set_check_run_wanted(const std::string& head_sha, const std::string& repo, int64_t now_ms);
  bool check_run_wanted(const std::string& head_sha, const std::string& repo);

 private:
  SqlDb& db_;
};

}  // namespace ootci
