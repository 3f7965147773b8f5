#pragma once
// Thin RAII over the SQLite C API, shared by the relay store and the evidence store.
#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace ootci {

// Opens (creating) a database the way every ootci store wants it: WAL with synchronous=NORMAL
// (a killed process loses no committed transaction; only an OS crash can lose the last commits),
// foreign keys on, and a busy timeout so two processes on one file wait instead of failing.
// Throws Error naming `path`.
sqlite3* sqlite_open(const std::string& path, int busy_timeout_ms);

// Runs one or more statements that return no rows; throws Error with SQLite's message.
void sqlite_exec(sqlite3* db, const std::string& sql);

// Prepared statements by SQL text, kept for the life of the connection: preparing wide
// statements on every call can cost more than running them. Not thread-safe: callers hold a lock.
class SqliteStmtCache {
 public:
  explicit SqliteStmtCache(sqlite3** db) : db_(db) {}
  ~SqliteStmtCache() { clear(); }
  SqliteStmtCache(const SqliteStmtCache&) = delete;
  SqliteStmtCache& operator=(const SqliteStmtCache&) = delete;
  void clear();
  sqlite3* db() const { return *db_; }
  sqlite3_stmt* get(const char* sql);

 private:
  sqlite3** db_;
  std::unordered_map<std::string, sqlite3_stmt*> map_;
};

class SqliteStmt {
 public:
  SqliteStmt(sqlite3* db, const char* sql);
  // Borrows a cached statement; it is reset, not finalized, when this goes away.
  SqliteStmt(SqliteStmtCache& cache, const char* sql)
      : db_(cache.db()), stmt_(cache.get(sql)), owned_(false) {}
  SqliteStmt(SqliteStmtCache& cache, const std::string& sql) : SqliteStmt(cache, sql.c_str()) {}
  ~SqliteStmt();
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  // Every integer type (and bool), so callers need no casts and `double` stays unambiguous.
  template <std::integral T>
  SqliteStmt& bind(int i, T v) {
    sqlite3_bind_int64(stmt_, i, static_cast<int64_t>(v));
    return *this;
  }
  SqliteStmt& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  SqliteStmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  SqliteStmt& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // True while a row is available.
  bool step();
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t i64(int col) { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = true;
};

}  // namespace ootci
