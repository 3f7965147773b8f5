#pragma once
// The one migration runner. Every ootci database records its version the same way: one row in
// a `schema_version` table. Databases from before this runner kept it elsewhere (the relay's
// SQLite file in PRAGMA user_version, the evidence store in a `meta` row); `legacy_version`
// reads that once, and the database is upgraded in place.
#include <functional>
#include <string>
#include <vector>

#include "sql/sql_db.h"

namespace ootci {

struct SchemaHistory {
  std::string name;  // in errors: "evidence schema version 9 is newer than this ootci (2)"
  // Step i takes the schema from version i to i + 1. Append only; never edit a shipped step.
  std::vector<std::string> steps;
  // The version a database without a schema_version table recorded; 0 when none (a new file).
  std::function<int(SqlTx&)> legacy_version;
};

// How long a process waits for another one's migration: each transaction still gives up at the
// database's own wait (sql_db.h), and migrate tries again until this much time has passed, so a
// relay replica that starts beside one migrating the shared store waits for it rather than
// failing its start.
constexpr int kMigrationPatienceMs = 120000;

// Applies the steps the database lacks in one transaction, serialized against every process
// that migrates the same database. An up-to-date database is only read, so a reader never
// waits for another process's write. Throws Error when the database is newer than `history`,
// SqlUnavailable when it stayed unavailable for `patience_ms`.
void migrate(SqlDb& db, const SchemaHistory& history, int patience_ms = kMigrationPatienceMs);

// The recorded version; 0 before the first migration.
int schema_version(SqlDb& db);

}  // namespace ootci
