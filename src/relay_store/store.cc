#include "relay_store/store.h"

#include "base/error.h"
#include "relay_store/migrations.h"
#include "sql/migrate.h"

namespace ootci {
namespace {

// Enough for the dispatcher threads and a few concurrent HTTP handlers; more would only hold
// server slots that sit idle.
constexpr size_t kPostgresPoolSize = 4;
// The most one transaction waits, for a connection and for locks, before it fails and the
// request gets its 503 (README, "Reliability"): short enough that the answer comes well within
// GitHub's 10 s delivery timeout.
constexpr int kTransactionWaitMs = 2000;

// Migrated before any area uses it.
std::unique_ptr<SqlDb> migrated(std::unique_ptr<SqlDb> db) {
  migrate(*db, relay_schema(db->dialect()));
  return db;
}

}  // namespace

Store::Store(std::unique_ptr<SqlDb> db)
    : db_(migrated(std::move(db))),
      outbox(*db_),
      jobs(*db_),
      tasks(*db_),
      levels(*db_),
      shared(*db_) {}

int Store::schema_version() {
  return ootci::schema_version(*db_);
}

std::unique_ptr<Store> open_store(const std::string& uri) {
  if (uri.rfind("sqlite:", 0) == 0)
    return std::make_unique<Store>(open_sqlite_db(uri.substr(7), kTransactionWaitMs));
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0)
    return std::make_unique<Store>(open_postgres_db(uri, kPostgresPoolSize, kTransactionWaitMs));
  throw Error("store: expected sqlite:PATH or a postgresql:// URI, got '" + uri + "'");
}

}  // namespace ootci
