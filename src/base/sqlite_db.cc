#include "base/sqlite_db.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ootci {

sqlite3* sqlite_open(const std::string& path, int busy_timeout_ms) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw Error(fmt::format("sqlite: cannot open {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  try {
    sqlite_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

void sqlite_exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(fmt::format("sqlite: {}", msg));
  }
}

void SqliteStmtCache::clear() {
  for (auto& [sql, stmt] : map_) sqlite3_finalize(stmt);
  map_.clear();
}

sqlite3_stmt* SqliteStmtCache::get(const char* sql) {
  auto it = map_.find(sql);
  if (it != map_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(*db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK)
    throw Error(fmt::format("sqlite: prepare failed: {}: {}", sqlite3_errmsg(*db_), sql));
  map_.emplace(sql, stmt);
  return stmt;
}

SqliteStmt::SqliteStmt(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
    throw Error(fmt::format("sqlite: prepare failed: {}: {}", sqlite3_errmsg(db), sql));
}

SqliteStmt::~SqliteStmt() {
  if (owned_) {
    sqlite3_finalize(stmt_);
  } else {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

bool SqliteStmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw Error(fmt::format("sqlite: {}", sqlite3_errmsg(db_)));
}

}  // namespace ootci
