#pragma once
#include "sql/migrate.h"

namespace ootci {

// The relay store's schema, for SQLite or PostgreSQL. Before the SQL layer, a SQLite relay
// store recorded its version in PRAGMA user_version, which `legacy_version` reads.
const SchemaHistory& relay_schema(SqlDialect dialect);

}  // namespace ootci
