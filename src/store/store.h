#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ootci {

// One accepted upstream webhook. `body` is the raw request body, kept verbatim because it is
// forwarded verbatim as client_payload.payload.
struct DeliveryRecord {
  std::string delivery_id;
  std::string event;  // X-GitHub-Event
  std::string action;
  std::string head_sha;
  int64_t pr_number = 0;
  int64_t received_ms = 0;
  std::string body;
};

enum class OutboxStatus { kPending, kDelivered, kFailed };
const char* to_string(OutboxStatus s);

// One dispatch to one downstream repo. The row is the relay's DISPATCHED record.
struct OutboxItem {
  int64_t id = 0;
  std::string delivery_id;
  std::string repo;
  std::string event_type;
  std::string callback_token;
  OutboxStatus status = OutboxStatus::kPending;
  int attempts = 0;
  int64_t created_ms = 0;
  int64_t next_attempt_ms = 0;
  int64_t deadline_ms = 0;
  int64_t delivered_ms = 0;
  std::string last_error;
};

struct OutboxCounts {
  int64_t pending = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
};

// The relay's persistent state. SQLite and PostgreSQL implement it and pass one test suite
// (store_test.cc). All methods are thread-safe.
class Store {
 public:
  virtual ~Store() = default;

  virtual int schema_version() = 0;

  // Commits the delivery and its outbox rows in one transaction. Returns false, writing nothing,
  // when the delivery id is already stored (a webhook redelivery).
  virtual bool accept_delivery(const DeliveryRecord& delivery,
                               const std::vector<OutboxItem>& outbox) = 0;
  virtual std::optional<DeliveryRecord> get_delivery(const std::string& delivery_id) = 0;

  // Leases up to `limit` pending rows that are due at `now_ms`: they are not due again until
  // now_ms + lease_ms, so a crashed worker's rows come back by themselves.
  virtual std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) = 0;
  virtual void mark_delivered(int64_t id, int attempts, int64_t now_ms) = 0;
  virtual void mark_retry(int64_t id, int attempts, int64_t next_attempt_ms,
                          const std::string& error) = 0;
  virtual void mark_failed(int64_t id, int attempts, const std::string& error) = 0;
  // Makes every leased row due now. Only safe when no other process uses the store (SQLite).
  virtual void release_leases(int64_t now_ms) = 0;
  // Earliest next_attempt_ms among pending rows, if any.
  virtual std::optional<int64_t> next_due_ms() = 0;

  virtual std::vector<OutboxItem> outbox_for(const std::string& delivery_id) = 0;
  virtual OutboxCounts outbox_counts() = 0;

  // L3 "create check runs for this commit" wish (CRCR's crcr:check_run_wanted).
  virtual void set_check_run_wanted(const std::string& head_sha, const std::string& repo,
                                    int64_t now_ms) = 0;
  virtual bool check_run_wanted(const std::string& head_sha, const std::string& repo) = 0;
};

// "sqlite:PATH" or a "postgresql://" / "postgres://" URI. Applies pending migrations.
std::unique_ptr<Store> open_store(const std::string& uri);

std::unique_ptr<Store> open_sqlite_store(const std::string& path);
std::unique_ptr<Store> open_postgres_store(const std::string& uri);

}  // namespace ootci
