#pragma once
// Where SQLite and PostgreSQL still differ, each in one place. Everything else is one text:
// - Placeholders: statements are written with `?`; the PostgreSQL driver numbers them ($1, $2…).
// - Byte order: SQLite registers a "C" collation (memcmp, like its BINARY), so `COLLATE "C"`
//   sorts the same in both whatever the PostgreSQL database's default collation is.
// - Aggregates: PostgreSQL's SUM over BIGINT is NUMERIC; rows read every number as int64, so
//   the same SQL reads the same values.
// - Advisory locks: SqlTx::lock is PostgreSQL's pg_advisory_xact_lock and nothing in SQLite,
//   whose write transactions already exclude each other.
// - The helpers below: auto-increment keys, row locks for claims and updates, scalar MIN/MAX,
//   LIMIT and OFFSET ranges, a JSON field's text, and how a table's existence is asked.
#include <cstdint>
#include <string>
#include <string_view>

#include "sql/sql_db.h"

namespace ootci {

// `?` placeholders as PostgreSQL's $1, $2, …; a `?` inside a quoted literal stays.
std::string numbered_placeholders(std::string_view sql);

// The column type of an auto-increment primary key.
const char* serial_key(SqlDialect d);

// Appended to a claim's inner SELECT: PostgreSQL replicas then claim concurrently without
// waiting on, or double-claiming, each other's rows. SQLite needs nothing (one writer at a time).
const char* skip_locked(SqlDialect d);

// Appended to a SELECT that reads a row the transaction will then change: PostgreSQL locks it so a
// concurrent writer waits instead of both acting on the old value. SQLite's write transactions
// already exclude each other.
const char* for_update(SqlDialect d);

// The two-argument (scalar) minimum and maximum: SQLite's MIN/MAX, PostgreSQL's LEAST/GREATEST.
const char* least(SqlDialect d);
const char* greatest(SqlDialect d);

// SQLite reads a negative LIMIT as "no limit" and a negative OFFSET as 0; PostgreSQL rejects
// both. These give values both read the way SQLite does.
int64_t sql_limit(int limit);
int64_t sql_offset(int offset);

// "?,?,…": n placeholders.
std::string placeholder_list(int n);

// The text value of `key` in a column holding a JSON object (NULL when absent): SQLite's
// json_extract, PostgreSQL's ->> on the column cast to jsonb. The column must hold valid JSON.
std::string json_text(SqlDialect d, const std::string& column, const std::string& key);

// One row if table `name` exists in the database's default schema.
const char* table_exists_sql(SqlDialect d);

}  // namespace ootci
