#include "relay_store/outbox_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "relay_store/store_sql.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

const RecordColumns<DeliveryRecord>& delivery_columns() {
  static const RecordColumns<DeliveryRecord> columns{
      column<&DeliveryRecord::delivery_id>("delivery_id"),
      column<&DeliveryRecord::event>("event"),
      column<&DeliveryRecord::action>("action"),
      column<&DeliveryRecord::head_sha>("head_sha"),
      column<&DeliveryRecord::pr_number>("pr_number"),
      column<&DeliveryRecord::received_ms>("received_ms"),
      column<&DeliveryRecord::body>("body"),
  };
  return columns;
}
const RecordColumns<DeliveryRecord>& delivery_columns_without_body() {
  static const RecordColumns<DeliveryRecord> columns = delivery_columns().subset(
      {"delivery_id", "event", "action", "head_sha", "pr_number", "received_ms"});
  ;
  return columns;
}

// What accept_delivery writes of a new outbox row; the rest are the table's defaults.
const RecordColumns<OutboxItem>& new_outbox_columns() {
  static const RecordColumns<OutboxItem> columns =
      outbox_columns().subset({"delivery_id", "repo", "event_type", "callback_token", "status",
                               "created_ms", "next_attempt_ms", "deadline_ms"});
  ;
  return columns;
}

constexpr const char* kCheckRunWantedInsert =
    "INSERT INTO check_run_wanted (head_sha, repo, created_ms) VALUES (?,?,?) "
    "ON CONFLICT DO NOTHING";

OutboxItem read_outbox(const SqlRow& r) {
  return outbox_columns().read(r);
}

bool by_id(const OutboxItem& a, const OutboxItem& b) {
  return a.id < b.id;
}

}  // namespace

bool OutboxStore::accept_delivery(const DeliveryRecord& d, const std::vector<OutboxItem>& outbox) {
  return db_.write("accept_delivery", [&](SqlTx& tx) {
    if (tx.exec(fmt::format("INSERT INTO deliveries ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                            delivery_columns().names(), delivery_columns().placeholders()),
                delivery_columns().bind(d)) == 0)
      return false;  // a redelivery: nothing was written
    std::string insert =
        fmt::format("INSERT INTO outbox ({}) VALUES ({})", new_outbox_columns().names(),
                    new_outbox_columns().placeholders());
    for (OutboxItem o : outbox) {
      o.delivery_id = d.delivery_id;
      o.status = OutboxStatus::kPending;
      tx.exec(insert, new_outbox_columns().bind(o));
    }
    for (const std::string& repo : d.check_run_repos)
      tx.exec(kCheckRunWantedInsert, {d.head_sha, repo, d.received_ms});
    return true;
  });
}

std::optional<DeliveryRecord> OutboxStore::get_delivery(const std::string& id, bool with_body) {
  const auto& columns = with_body ? delivery_columns() : delivery_columns_without_body();
  return db_.first("get_delivery",
                   fmt::format("SELECT {} FROM deliveries WHERE delivery_id = ?", columns.names()),
                   {id}, [&](const SqlRow& r) { return columns.read(r); });
}

std::vector<OutboxItem> OutboxStore::claim_due(int64_t now_ms, int limit, int64_t lease_ms) {
  return db_.write("claim_due", [&](SqlTx& tx) {
    auto out = tx.all(fmt::format("UPDATE outbox SET leased = 1, lease = ?, next_attempt_ms = ? "
                                  "WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' "
                                  "AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id "
                                  "LIMIT ?{}) RETURNING {}",
                                  skip_locked(tx.dialect()), outbox_columns().names()),
                      {lease_token(), now_ms + lease_ms, now_ms, sql_limit(limit)}, read_outbox);
    std::sort(out.begin(), out.end(), by_id);  // RETURNING has no order
    return out;
  });
}

std::vector<bool> OutboxStore::settle_outbox(const std::vector<OutboxOutcome>& outcomes) {
  return db_.write("settle_outbox", [&](SqlTx& tx) {
    std::vector<bool> applied;
    applied.reserve(outcomes.size());
    for (const auto& o : outcomes) {
      const auto& it = o.item;
      int64_t n = 0;
      switch (o.kind) {
        case OutboxOutcome::kDelivered:
          n = tx.exec(
              "UPDATE outbox SET status = 'delivered', leased = 0, lease = '', attempts = ?, "
              "delivered_ms = ?, last_error = '' WHERE id = ? AND lease = ? AND status = "
              "'pending'",
              {o.attempts, o.at_ms, it.id, it.lease});
          break;
        case OutboxOutcome::kRetry:
          n = tx.exec(
              "UPDATE outbox SET leased = 0, lease = '', attempts = ?, next_attempt_ms = ?, "
              "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
              {o.attempts, o.at_ms, o.error, it.id, it.lease});
          break;
        case OutboxOutcome::kFailed:
          n = tx.exec(
              "UPDATE outbox SET status = 'failed', leased = 0, lease = '', attempts = ?, "
              "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
              {o.attempts, o.error, it.id, it.lease});
          break;
      }
      applied.push_back(n > 0);
    }
    return applied;
  });
}

void OutboxStore::release_leases(int64_t now_ms) {
  db_.exec("release_leases",
           "UPDATE outbox SET leased = 0, lease = '', next_attempt_ms = ? WHERE leased = 1",
           {now_ms});
}

std::optional<int64_t> OutboxStore::next_due_ms() {
  return db_.read("next_due_ms", [&](SqlTx& tx) {
    std::optional<int64_t> out;
    tx.each("SELECT MIN(next_attempt_ms) FROM outbox WHERE status = 'pending'", {},
            [&](const SqlRow& r) {
              if (!r.is_null(0)) out = r.i64(0);
            });
    return out;
  });
}

std::vector<OutboxItem> OutboxStore::outbox_for(const std::string& delivery_id) {
  return db_.all(
      "outbox_for",
      fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? ORDER BY repo COLLATE \"C\"",
                  outbox_columns().names()),
      {delivery_id}, read_outbox);
}

OutboxCounts OutboxStore::outbox_counts() {
  return db_.read("outbox_counts", [&](SqlTx& tx) {
    OutboxCounts c;
    tx.each("SELECT status, COUNT(*) FROM outbox GROUP BY status", {}, [&](const SqlRow& r) {
      OutboxStatus st = parse_outbox_status(r.text(0));
      (st == OutboxStatus::kPending     ? c.pending
       : st == OutboxStatus::kDelivered ? c.delivered
                                        : c.failed) += r.i64(1);
    });
    return c;
  });
}

std::optional<OutboxItem> OutboxStore::dispatch_record(const std::string& delivery_id,
                                                       const std::string& repo) {
  return db_.first("dispatch_record",
                   fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? AND repo = ?",
                               outbox_columns().names()),
                   {delivery_id, repo}, read_outbox);
}

void OutboxStore::set_check_run_wanted(const std::string& sha, const std::string& repo,
                                       int64_t now_ms) {
  db_.exec("set_check_run_wanted", kCheckRunWantedInsert, {sha, repo, now_ms});
}

bool OutboxStore::check_run_wanted(const std::string& sha, const std::string& repo) {
  return db_
      .first("check_run_wanted", "SELECT 1 FROM check_run_wanted WHERE head_sha = ? AND repo = ?",
             {sha, repo}, read_i64)
      .has_value();
}

}  // namespace ootci
