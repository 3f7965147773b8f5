// The PostgreSQL driver of the SQL layer: a small pool of connections, a transaction per call.
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <pqxx/pqxx>
#include <regex>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/text.h"
#include "sql/sql_db.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// The URI for error messages: the password, in the userinfo or as a parameter, never leaves.
std::string redact(const std::string& uri) {
  static const std::regex userinfo_password(R"(^([a-z]+://[^:@/?]*):[^@/?]*@)");
  static const std::regex param_password(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(uri, userinfo_password, "$1:***@");
  return std::regex_replace(out, param_password, "$1***");
}

// SQLSTATEs that say the server, not the statement, is at fault: connection exceptions (08), a
// read-only transaction (25006), insufficient resources such as a full disk (53), operator
// intervention such as a shutdown (57P), system errors such as I/O (58).
bool server_unavailable(const std::string& state) {
  return state.starts_with("08") || state == "25006" || state.starts_with("53") ||
         state.starts_with("57P") || state.starts_with("58");
}

// lock_not_available: lock_timeout ended a wait for a lock another transaction holds.
constexpr std::string_view kLockNotAvailable = "55P03";

using Clock = std::chrono::steady_clock;

int64_t ms_left(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

class PostgresRow : public SqlRow {
 public:
  explicit PostgresRow(const pqxx::row& r) : r_(r) {}
  std::string text(int col) const override {
    const pqxx::field f = r_[col];
    return f.is_null() ? std::string() : std::string(f.c_str(), f.size());
  }
  // SUM over BIGINT arrives as NUMERIC text ("12"), which reads as int64 like any other.
  int64_t i64(int col) const override {
    const pqxx::field f = r_[col];
    return f.is_null() ? 0 : f.as<int64_t>();
  }
  double f64(int col) const override {
    const pqxx::field f = r_[col];
    return f.is_null() ? 0 : f.as<double>();
  }
  bool is_null(int col) const override { return r_[col].is_null(); }

 private:
  const pqxx::row& r_;
};

// The statements of one transaction, whose waits for locks end at its deadline: lock_timeout is
// set to what is left of it when the transaction starts, and set again before a statement once a
// quarter of the wait has gone by since, so several waits in one transaction overrun the deadline
// by at most a quarter of the wait (one SET per statement would double the round trips).
class PostgresTx : public SqlTx {
 public:
  PostgresTx(pqxx::work& w, Clock::time_point deadline, std::chrono::milliseconds wait)
      : w_(w), deadline_(deadline), wait_(wait) {
    bound_lock_waits();
  }
  SqlDialect dialect() const override { return SqlDialect::kPostgres; }

  int64_t run(std::string_view sql, const SqlParam* params, size_t count,
              const std::function<void(const SqlRow&)>& on_row) override {
    before_statement();
    // Every parameter travels as text (NULL as a null pointer); the server infers its type.
    std::vector<std::string> numbers;
    numbers.reserve(count);
    std::vector<std::string> texts;
    texts.reserve(count);
    std::vector<const char*> values;
    values.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const SqlParam& p = params[i];
      switch (p.kind()) {
        case SqlParam::Kind::kNull:
          values.push_back(nullptr);
          break;
        case SqlParam::Kind::kInt:
          values.push_back(numbers.emplace_back(std::to_string(p.int_value())).c_str());
          break;
        case SqlParam::Kind::kReal:
          values.push_back(numbers.emplace_back(fmt::format("{}", p.real_value())).c_str());
          break;
        case SqlParam::Kind::kText:
          values.push_back(texts.emplace_back(p.text_value()).c_str());
          break;
      }
    }
    pqxx::result r =
        w_.exec_params(numbered_placeholders(sql), pqxx::prepare::make_dynamic_params(values));
    if (on_row)
      for (const auto& row : r) on_row(PostgresRow(row));
    return static_cast<int64_t>(r.affected_rows());
  }

  void script(const std::string& sql) override {
    before_statement();
    w_.exec(sql);
  }

  void lock(int64_t key) override {
    before_statement();
    w_.exec_params("SELECT pg_advisory_xact_lock($1)", key);
  }

 private:
  void before_statement() {
    if (Clock::now() - set_at_ > wait_ / 4) bound_lock_waits();
  }
  // A deadline already past still sets 1 ms: a free lock is taken at once, a held one fails.
  void bound_lock_waits() {
    set_at_ = Clock::now();
    w_.exec(fmt::format("SET LOCAL lock_timeout = {}", std::max<int64_t>(ms_left(deadline_), 1)));
  }

  pqxx::work& w_;
  Clock::time_point deadline_;
  std::chrono::milliseconds wait_;
  Clock::time_point set_at_;
};

class PostgresDb : public SqlDb {
 public:
  PostgresDb(std::string uri, size_t pool_size, int wait_ms)
      : uri_(std::move(uri)), pool_size_(pool_size), wait_(wait_ms) {}
  SqlDialect dialect() const override { return SqlDialect::kPostgres; }

 protected:
  // Every libpqxx failure becomes an Error naming the operation. A lost connection is dropped,
  // so the next operation opens a fresh one. The wait bounds the transaction's waits in all: for
  // a pooled connection, then for the locks its statements take (as on SQLite).
  void transact(bool, const char* op, const std::function<void(SqlTx&)>& body) override {
    auto deadline = Clock::now() + wait_;
    Lease lease{this, acquire(op, deadline)};
    try {
      pqxx::work w(*lease.conn);
      PostgresTx tx(w, deadline, wait_);
      body(tx);
      w.commit();
    } catch (const pqxx::broken_connection& e) {
      lease.conn.reset();
      throw SqlUnavailable(
          fmt::format("postgres: {}: connection lost: {}", op, one_line(e.what())));
    } catch (const pqxx::in_doubt_error& e) {
      lease.conn.reset();
      throw SqlUnavailable(
          fmt::format("postgres: {}: connection lost during commit, outcome unknown: {}", op,
                      one_line(e.what())));
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == kLockNotAvailable)  // the connection is fine: it stays in the pool
        throw SqlUnavailable(
            fmt::format("postgres: {}: a lock was still held elsewhere after {} ms: {}", op,
                        wait_.count(), one_line(e.what())));
      if (server_unavailable(e.sqlstate())) {
        lease.conn.reset();  // a server shutting down or out of resources: start afresh
        throw SqlUnavailable(fmt::format("postgres: {}: {}", op, one_line(e.what())));
      }
      throw Error(fmt::format("postgres: {}: {}", op, one_line(e.what())));
    } catch (const pqxx::pqxx_exception& e) {
      throw Error(fmt::format("postgres: {}: {}", op, one_line(e.base().what())));
    }
  }

 private:
  using Conn = std::unique_ptr<pqxx::connection>;

  // Takes an idle connection, or opens one while fewer than pool_size_ exist, or waits until the
  // deadline.
  Conn acquire(const char* op, Clock::time_point deadline) {
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return !idle_.empty() || open_ < pool_size_; }))
        throw SqlUnavailable(fmt::format(
            "postgres: {}: no connection free within {} ms (this process's other transactions "
            "held all {})",
            op, wait_.count(), pool_size_));
      if (!idle_.empty()) {
        Conn c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      ++open_;
    }
    // Connect outside the lock so a slow server does not block the other threads' connections.
    try {
      return std::make_unique<pqxx::connection>(uri_);
    } catch (const std::exception& e) {
      give_back(nullptr);
      throw SqlUnavailable(
          fmt::format("postgres: cannot connect to {}: {}", redact(uri_), one_line(e.what())));
    }
  }

  // Returns a connection to the pool; nullptr drops it, so the next acquire reconnects.
  void give_back(Conn c) {
    {
      std::lock_guard lock(mu_);
      if (c && c->is_open())
        idle_.push_back(std::move(c));
      else
        --open_;
    }
    cv_.notify_one();
  }

  // A pooled connection, returned to the pool when the operation ends.
  struct Lease {
    PostgresDb* db;
    Conn conn;
    ~Lease() { db->give_back(std::move(conn)); }
  };

  std::string uri_;
  size_t pool_size_;
  std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Conn> idle_;
  size_t open_ = 0;  // connections that exist, idle or in use
};

}  // namespace

std::unique_ptr<SqlDb> open_postgres_db(const std::string& uri, size_t pool_size, int wait_ms) {
  return std::make_unique<PostgresDb>(uri, pool_size, wait_ms);
}

}  // namespace ootci
