// The SQLite driver of the SQL layer: one connection, one transaction at a time.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "sql/sql_db.h"

namespace ootci {
namespace {

// The result codes that say the database, not the statement, is at fault.
bool unavailable(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
      return true;
  }
  return false;
}

[[noreturn]] void fail(int rc, const std::string& msg) {
  if (unavailable(rc)) throw SqlUnavailable(fmt::format("sqlite: {}", msg));
  throw Error(fmt::format("sqlite: {}", msg));
}

[[noreturn]] void fail(sqlite3* db) {
  fail(sqlite3_extended_errcode(db), sqlite3_errmsg(db));
}

void exec_script(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    fail(rc == SQLITE_ERROR ? sqlite3_extended_errcode(db) : rc, msg);
  }
}

// PostgreSQL's "C" collation under SQLite: byte order, exactly SQLite's BINARY.
int compare_bytes(void*, int a_len, const void* a, int b_len, const void* b) {
  // An empty value may come as a null pointer, which memcmp must not get even for 0 bytes.
  size_t n = static_cast<size_t>(std::min(a_len, b_len));
  int c = n ? std::memcmp(a, b, n) : 0;
  return c ? c : a_len - b_len;
}

struct SqlHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class SqliteRow : public SqlRow {
 public:
  explicit SqliteRow(sqlite3_stmt* s) : s_(s) {}
  std::string text(int col) const override {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p ? std::string(p, sqlite3_column_bytes(s_, col)) : std::string();
  }
  int64_t i64(int col) const override { return sqlite3_column_int64(s_, col); }
  double f64(int col) const override { return sqlite3_column_double(s_, col); }
  bool is_null(int col) const override { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_;
};

class SqliteDb : public SqlDb, private SqlTx {
 public:
  SqliteDb(const std::string& path, int busy_timeout_ms, const std::string& pragmas)
      : busy_timeout_(busy_timeout_ms) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error(fmt::format("sqlite: cannot open {}: {}", path, msg));
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    sqlite3_create_collation_v2(db_, "C", SQLITE_UTF8, nullptr, compare_bytes, nullptr);
    try {
      // WAL with synchronous=NORMAL: a killed process loses no committed transaction; only an
      // OS crash can lose the last commits. The busy timeout makes two processes on one file
      // wait instead of failing.
      exec_script(db_,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                  "PRAGMA foreign_keys=ON;" +
                      pragmas);
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~SqliteDb() override {
    // Statements must be finalized before the connection closes.
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }

  SqlDialect dialect() const override { return SqlDialect::kSqlite; }

 protected:
  // The busy timeout bounds the whole wait of one transaction, for this connection (held by
  // another thread) and then for the file's lock (held by another process). Waiting for each in
  // turn let threads queued behind a locked file add up their waits: a relay's webhook then
  // answered its 503 after GitHub's 10 s, not within the 2 s its store is given.
  void transact(bool write, const char*, const std::function<void(SqlTx&)>& body) override {
    auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
    std::unique_lock lock(mu_, std::defer_lock);
    if (!lock.try_lock_until(deadline))
      throw SqlUnavailable(fmt::format(
          "sqlite: database is locked (this process's other transactions held its connection "
          "for {} ms)",
          busy_timeout_.count()));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    sqlite3_busy_timeout(db_, static_cast<int>(std::max<int64_t>(left.count(), 1)));
    exec_script(db_, write ? "BEGIN IMMEDIATE" : "BEGIN");
    try {
      body(*this);
      exec_script(db_, "COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

 private:
  int64_t run(std::string_view sql, const SqlParam* params, size_t count,
              const std::function<void(const SqlRow&)>& on_row) override {
    sqlite3_stmt* s = prepared(sql);
    // Reset however this ends, so the cached statement holds no lock and no borrowed text.
    struct Reset {
      sqlite3_stmt* s;
      ~Reset() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{s};
    for (size_t i = 0; i < count; ++i) {
      int at = static_cast<int>(i) + 1;
      const SqlParam& p = params[i];
      switch (p.kind()) {
        case SqlParam::Kind::kNull:
          sqlite3_bind_null(s, at);
          break;
        case SqlParam::Kind::kInt:
          sqlite3_bind_int64(s, at, p.int_value());
          break;
        case SqlParam::Kind::kReal:
          sqlite3_bind_double(s, at, p.real_value());
          break;
        case SqlParam::Kind::kText:
          // Static: the text outlives the statement's use of it (reset clears the binding).
          sqlite3_bind_text(s, at, p.text_value().data(), static_cast<int>(p.text_value().size()),
                            SQLITE_STATIC);
          break;
      }
    }
    SqliteRow row(s);
    for (;;) {
      int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) fail(db_);
      if (on_row) on_row(row);
    }
    return sqlite3_stmt_readonly(s) ? 0 : sqlite3_changes64(db_);
  }

  void script(const std::string& sql) override { exec_script(db_, sql); }
  void lock(int64_t) override {}

  // Prepared statements by SQL text, kept for the life of the connection: preparing wide
  // statements on every call can cost more than running them.
  sqlite3_stmt* prepared(std::string_view sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &stmt, nullptr) != SQLITE_OK)
      throw Error(fmt::format("sqlite: prepare failed: {}: {}", sqlite3_errmsg(db_), sql));
    cache_.emplace(std::string(sql), stmt);
    return stmt;
  }

  std::chrono::milliseconds busy_timeout_;
  std::timed_mutex mu_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

}  // namespace

std::unique_ptr<SqlDb> open_sqlite_db(const std::string& path, int busy_timeout_ms,
                                      const std::string& pragmas) {
  return std::make_unique<SqliteDb>(path, busy_timeout_ms, pragmas);
}

}  // namespace ootci
