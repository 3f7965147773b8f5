#include "sql/migrate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "base/error.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// Arbitrary but fixed: every process must take the same lock before migrating.
constexpr int64_t kMigrationLockKey = 0x6f6f746369;  // "ootci"

bool has_version_table(SqlTx& tx) {
  bool found = false;
  tx.each(table_exists_sql(tx.dialect()), {"schema_version"}, [&](const SqlRow&) { found = true; });
  return found;
}

int recorded_version(SqlTx& tx) {
  int version = 0;
  tx.each("SELECT version FROM schema_version", {},
          [&](const SqlRow& r) { version = static_cast<int>(r.i64(0)); });
  return version;
}

void migrate_once(SqlDb& db, const SchemaHistory& history) {
  const int latest = static_cast<int>(history.steps.size());
  bool current = db.read("migrate", [&](SqlTx& tx) {
    return has_version_table(tx) && recorded_version(tx) == latest;
  });
  if (current) return;
  db.write("migrate", [&](SqlTx& tx) {
    // Processes starting at once would race to create the same tables; the lock serializes
    // them, and the later ones find the schema current.
    tx.lock(kMigrationLockKey);
    int version = has_version_table(tx)    ? recorded_version(tx)
                  : history.legacy_version ? history.legacy_version(tx)
                                           : 0;
    if (version > latest)
      throw Error(fmt::format("{} schema version {} is newer than this ootci ({})", history.name,
                              version, latest));
    tx.script("CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL)");
    for (int i = version; i < latest; ++i) tx.script(history.steps[i]);
    tx.exec("DELETE FROM schema_version");
    tx.exec("INSERT INTO schema_version (version) VALUES (?)", {latest});
  });
}

}  // namespace

void migrate(SqlDb& db, const SchemaHistory& history, int patience_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(patience_ms);
  for (bool said = false;; said = true) {
    try {
      migrate_once(db, history);
      return;
    } catch (const SqlUnavailable& e) {
      // Another process migrating holds the lock (or the server is not up yet). Trying again is
      // safe: the steps run under the lock, after reading the version it left.
      if (std::chrono::steady_clock::now() >= deadline) throw;
      if (!said)
        spdlog::warn(
            "{} database unavailable ({}); trying again for up to {} s, as another "
            "process may be migrating it",
            history.name, e.what(), patience_ms / 1000);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

int schema_version(SqlDb& db) {
  return db.read("schema_version",
                 [](SqlTx& tx) { return has_version_table(tx) ? recorded_version(tx) : 0; });
}

}  // namespace ootci
