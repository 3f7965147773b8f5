#pragma once
// The one SQL layer under every ootci database: the relay store (SQLite or PostgreSQL), the
// evidence store and the agent's queue (SQLite). Statements are written once, with `?`
// placeholders; what still differs between the dialects is listed in sql_dialect.h.
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/error.h"

namespace ootci {

enum class SqlDialect { kSqlite, kPostgres };

// The database cannot take the operation now, through no fault of the statement: SQLite busy
// past its timeout, a full disk or an I/O error; PostgreSQL unreachable, its connection lost, read
// only, out of space or shutting down. Nothing of the transaction was committed, unless the
// message says the outcome is unknown. A server answers 503 and the caller retries later.
struct SqlUnavailable : Error {
  using Error::Error;
};

// A statement parameter. Text is borrowed: the caller's strings outlive the statement, so
// binding copies nothing (ingest binds millions of them).
class SqlParam {
 public:
  enum class Kind { kNull, kInt, kReal, kText };
  SqlParam(std::nullptr_t) {}
  template <std::integral T>
  SqlParam(T v) : kind_(Kind::kInt), int_(static_cast<int64_t>(v)) {}
  SqlParam(double v) : kind_(Kind::kReal), real_(v) {}
  SqlParam(std::string_view v) : kind_(Kind::kText), text_(v) {}
  SqlParam(const std::string& v) : kind_(Kind::kText), text_(v) {}
  SqlParam(const char* v) : kind_(Kind::kText), text_(v) {}
  // Text computed for the statement (a record column's encoded value), kept alive by the
  // parameter and its copies.
  static SqlParam owned(std::string v) {
    SqlParam p(nullptr);
    p.kind_ = Kind::kText;
    p.owned_ = std::make_shared<const std::string>(std::move(v));
    p.text_ = *p.owned_;
    return p;
  }

  Kind kind() const { return kind_; }
  int64_t int_value() const { return int_; }
  double real_value() const { return real_; }
  std::string_view text_value() const { return text_; }

 private:
  Kind kind_ = Kind::kNull;
  int64_t int_ = 0;
  double real_ = 0;
  std::string_view text_;
  std::shared_ptr<const std::string> owned_;
};

// Text that binds as NULL when empty (optional columns stored as NULL).
inline SqlParam null_if_empty(const std::string& v) {
  return v.empty() ? SqlParam(nullptr) : SqlParam(v);
}

// One result row, valid only inside the callback that receives it. NULL reads as "" or 0, which
// is what an aggregate over no rows means to every caller.
class SqlRow {
 public:
  virtual ~SqlRow() = default;
  virtual std::string text(int col) const = 0;
  virtual int64_t i64(int col) const = 0;
  virtual double f64(int col) const = 0;
  virtual bool is_null(int col) const = 0;
};

using SqlParams = std::initializer_list<SqlParam>;

// The statements of one transaction.
class SqlTx {
 public:
  virtual ~SqlTx() = default;
  virtual SqlDialect dialect() const = 0;
  // One statement; calls on_row (if any) for every row it returns. Returns the rows an INSERT,
  // UPDATE or DELETE changed (what a SELECT returns is undefined).
  virtual int64_t run(std::string_view sql, const SqlParam* params, size_t count,
                      const std::function<void(const SqlRow&)>& on_row) = 0;
  // Several statements without parameters: a migration.
  virtual void script(const std::string& sql) = 0;
  // Holds `key` until the transaction ends, against every process on the database
  // (PostgreSQL's advisory locks). SQLite's write transactions already exclude each other, so
  // there it does nothing.
  virtual void lock(int64_t key) = 0;

  int64_t exec(std::string_view sql, SqlParams params = {}) {
    return run(sql, params.begin(), params.size(), {});
  }
  int64_t exec(std::string_view sql, const std::vector<SqlParam>& params) {
    return run(sql, params.data(), params.size(), {});
  }
  template <typename Fn>
  void each(std::string_view sql, SqlParams params, Fn&& on_row) {
    run(sql, params.begin(), params.size(), on_row);
  }
  template <typename Fn>
  void each(std::string_view sql, const std::vector<SqlParam>& params, Fn&& on_row) {
    run(sql, params.data(), params.size(), on_row);
  }
  // Every row through `read` (SqlRow -> T).
  template <typename Read>
  auto all(std::string_view sql, SqlParams params, Read&& read) {
    std::vector<std::invoke_result_t<Read&, const SqlRow&>> out;
    each(sql, params, [&](const SqlRow& r) { out.push_back(read(r)); });
    return out;
  }
  // The first row through `read`, if there is one.
  template <typename Read>
  auto first(std::string_view sql, SqlParams params, Read&& read) {
    std::optional<std::invoke_result_t<Read&, const SqlRow&>> out;
    each(sql, params, [&](const SqlRow& r) {
      if (!out) out = read(r);
    });
    return out;
  }
};

// A database: one SQLite connection or a pool of PostgreSQL connections. Thread-safe.
class SqlDb {
 public:
  virtual ~SqlDb() = default;
  virtual SqlDialect dialect() const = 0;

  // Runs fn(tx) in one transaction: committed when fn returns, rolled back when it throws.
  // `op` names the operation in errors. A write transaction on SQLite takes the write lock at
  // once (BEGIN IMMEDIATE), so its reads and writes see one state.
  template <typename Fn>
  auto write(const char* op, Fn&& fn) {
    return call(true, op, std::forward<Fn>(fn));
  }
  // A read-only transaction: one consistent snapshot, no write lock.
  template <typename Fn>
  auto read(const char* op, Fn&& fn) {
    return call(false, op, std::forward<Fn>(fn));
  }

 protected:
  virtual void transact(bool write, const char* op, const std::function<void(SqlTx&)>& body) = 0;

 private:
  template <typename Fn>
  auto call(bool write, const char* op, Fn&& fn) {
    using R = std::invoke_result_t<Fn&, SqlTx&>;
    if constexpr (std::is_void_v<R>) {
      transact(write, op, fn);
    } else {
      std::optional<R> out;
      transact(write, op, [&](SqlTx& tx) { out.emplace(fn(tx)); });
      return std::move(*out);
    }
  }

 public:
  // One statement in its own write transaction: the rows it changed.
  int64_t exec(const char* op, std::string_view sql, SqlParams params = {}) {
    return write(op, [&](SqlTx& tx) { return tx.exec(sql, params); });
  }
  // One query in its own read transaction: every row, or the first, through `read`.
  template <typename Read>
  auto all(const char* op, std::string_view sql, SqlParams params, Read&& read) {
    return this->read(op, [&](SqlTx& tx) { return tx.all(sql, params, read); });
  }
  template <typename Read>
  auto first(const char* op, std::string_view sql, SqlParams params, Read&& read) {
    return this->read(op, [&](SqlTx& tx) { return tx.first(sql, params, read); });
  }
};

// Each database is opened with a wait: the most one transaction waits in all, for this
// process's connection (held by its other threads) and then for the locks other connections
// hold. Past it the transaction fails as SqlUnavailable with nothing committed, so a server
// answers its 503 in time instead of queueing requests behind a lock. Running the statements is
// not bounded: a long migration finishes.

// Opens (creating) a SQLite database: one connection, taken by one transaction at a time.
// `pragmas` run once on the new connection.
std::unique_ptr<SqlDb> open_sqlite_db(const std::string& path, int wait_ms,
                                      const std::string& pragmas = "");
// A pool of up to `pool_size` connections to a postgresql:// URI, opened as they are needed.
// The wait covers a free connection of the pool, then every lock wait (lock_timeout, advisory
// locks included).
std::unique_ptr<SqlDb> open_postgres_db(const std::string& uri, size_t pool_size, int wait_ms);

}  // namespace ootci
