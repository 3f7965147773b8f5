#include <fmt/format.h>
#include <sqlite3.h>

#include <mutex>

#include "base/error.h"
#include "store/migrations.h"
#include "store/store.h"

namespace ootci {
namespace {

OutboxStatus parse_status(const std::string& s) {
  if (s == "delivered") return OutboxStatus::kDelivered;
  if (s == "failed") return OutboxStatus::kFailed;
  return OutboxStatus::kPending;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error(fmt::format("sqlite: prepare failed: {}: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // True while a row is available.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(fmt::format("sqlite: {}", sqlite3_errmsg(db_)));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t i64(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string text(int col) {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

constexpr const char* kOutboxColumns =
    "id, delivery_id, repo, event_type, callback_token, status, attempts, created_ms, "
    "next_attempt_ms, deadline_ms, delivered_ms, last_error";

OutboxItem read_outbox(Stmt& s) {
  OutboxItem o;
  o.id = s.i64(0);
  o.delivery_id = s.text(1);
  o.repo = s.text(2);
  o.event_type = s.text(3);
  o.callback_token = s.text(4);
  o.status = parse_status(s.text(5));
  o.attempts = static_cast<int>(s.i64(6));
  o.created_ms = s.i64(7);
  o.next_attempt_ms = s.i64(8);
  o.deadline_ms = s.i64(9);
  o.delivered_ms = s.i64(10);
  o.last_error = s.text(11);
  return o;
}

class SqliteStore : public Store {
 public:
  explicit SqliteStore(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK)
      throw Error(fmt::format("sqlite: cannot open {}: {}", path, sqlite3_errmsg(db_)));
    sqlite3_busy_timeout(db_, 5000);
    // WAL with synchronous=NORMAL survives a killed process; only an OS crash can lose the last
    // commits. That is the guarantee the README documents.
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
    migrate();
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  int schema_version() override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "PRAGMA user_version");
    s.step();
    return static_cast<int>(s.i64(0));
  }

  bool accept_delivery(const DeliveryRecord& d, const std::vector<OutboxItem>& outbox) override {
    std::lock_guard lock(mu_);
    exec("BEGIN IMMEDIATE");
    try {
      Stmt ins(db_,
               "INSERT INTO deliveries (delivery_id, event, action, head_sha, pr_number, "
               "received_ms, body) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
      ins.bind(1, d.delivery_id).bind(2, d.event).bind(3, d.action).bind(4, d.head_sha);
      ins.bind(5, d.pr_number).bind(6, d.received_ms).bind(7, d.body);
      ins.step();
      if (sqlite3_changes(db_) == 0) {
        exec("ROLLBACK");
        return false;
      }
      Stmt row(db_,
               "INSERT INTO outbox (delivery_id, repo, event_type, callback_token, status, "
               "created_ms, next_attempt_ms, deadline_ms) VALUES (?,?,?,?,'pending',?,?,?)");
      for (const OutboxItem& o : outbox) {
        row.reset();
        row.bind(1, d.delivery_id).bind(2, o.repo).bind(3, o.event_type).bind(4, o.callback_token);
        row.bind(5, o.created_ms).bind(6, o.next_attempt_ms).bind(7, o.deadline_ms);
        row.step();
      }
      exec("COMMIT");
      return true;
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

  std::optional<DeliveryRecord> get_delivery(const std::string& id) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "SELECT delivery_id, event, action, head_sha, pr_number, received_ms, body FROM "
           "deliveries WHERE delivery_id = ?");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return DeliveryRecord{s.text(0), s.text(1), s.text(2), s.text(3),
                          s.i64(4),  s.i64(5),  s.text(6)};
  }

  std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, fmt::format("UPDATE outbox SET leased = 1, next_attempt_ms = ? WHERE id IN "
                            "(SELECT id FROM outbox WHERE status = 'pending' AND "
                            "next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?) "
                            "RETURNING {}",
                            kOutboxColumns)
                    .c_str());
    s.bind(1, now_ms + lease_ms).bind(2, now_ms).bind(3, limit);
    std::vector<OutboxItem> out;
    while (s.step()) out.push_back(read_outbox(s));
    return out;
  }

  void mark_delivered(int64_t id, int attempts, int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "UPDATE outbox SET status = 'delivered', leased = 0, attempts = ?, delivered_ms = ?, "
           "last_error = '' WHERE id = ?");
    s.bind(1, attempts).bind(2, now_ms).bind(3, id).step();
  }

  void mark_retry(int64_t id, int attempts, int64_t next_ms, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "UPDATE outbox SET leased = 0, attempts = ?, next_attempt_ms = ?, last_error = ? "
           "WHERE id = ?");
    s.bind(1, attempts).bind(2, next_ms).bind(3, error).bind(4, id).step();
  }

  void mark_failed(int64_t id, int attempts, const std::string& error) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "UPDATE outbox SET status = 'failed', leased = 0, attempts = ?, last_error = ? "
           "WHERE id = ?");
    s.bind(1, attempts).bind(2, error).bind(3, id).step();
  }

  void release_leases(int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "UPDATE outbox SET leased = 0, next_attempt_ms = ? WHERE leased = 1");
    s.bind(1, now_ms).step();
  }

  std::optional<int64_t> next_due_ms() override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT MIN(next_attempt_ms), COUNT(*) FROM outbox WHERE status = 'pending'");
    s.step();
    if (s.i64(1) == 0) return std::nullopt;
    return s.i64(0);
  }

  std::vector<OutboxItem> outbox_for(const std::string& delivery_id) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           fmt::format("SELECT {} FROM outbox WHERE delivery_id = ? ORDER BY repo", kOutboxColumns)
               .c_str());
    s.bind(1, delivery_id);
    std::vector<OutboxItem> out;
    while (s.step()) out.push_back(read_outbox(s));
    return out;
  }

  OutboxCounts outbox_counts() override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT status, COUNT(*) FROM outbox GROUP BY status");
    OutboxCounts c;
    while (s.step()) {
      OutboxStatus st = parse_status(s.text(0));
      (st == OutboxStatus::kPending     ? c.pending
       : st == OutboxStatus::kDelivered ? c.delivered
                                        : c.failed) = s.i64(1);
    }
    return c;
  }

  void set_check_run_wanted(const std::string& sha, const std::string& repo,
                            int64_t now_ms) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "INSERT INTO check_run_wanted (head_sha, repo, created_ms) VALUES (?,?,?) "
           "ON CONFLICT DO NOTHING");
    s.bind(1, sha).bind(2, repo).bind(3, now_ms).step();
  }

  bool check_run_wanted(const std::string& sha, const std::string& repo) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT 1 FROM check_run_wanted WHERE head_sha = ? AND repo = ?");
    s.bind(1, sha).bind(2, repo);
    return s.step();
  }

 private:
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw Error(fmt::format("sqlite: {}", msg));
    }
  }

  void migrate() {
    std::lock_guard lock(mu_);
    const auto& steps = migrations(SqlDialect::kSqlite);
    exec("BEGIN IMMEDIATE");
    try {
      Stmt v(db_, "PRAGMA user_version");
      v.step();
      int current = static_cast<int>(v.i64(0));
      if (current > static_cast<int>(steps.size()))
        throw Error(fmt::format("sqlite: database schema version {} is newer than this ootci ({})",
                                current, steps.size()));
      for (size_t i = current; i < steps.size(); ++i) exec(steps[i]);
      exec(fmt::format("PRAGMA user_version = {}", steps.size()));
      exec("COMMIT");
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

  std::mutex mu_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Store> open_sqlite_store(const std::string& path) {
  return std::make_unique<SqliteStore>(path);
}

}  // namespace ootci
