#include "sql/sql_dialect.h"

#include <limits>

namespace ootci {

std::string numbered_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?') {
      out += '$';
      out += std::to_string(++n);
      continue;
    }
    out += c;
  }
  return out;
}

const char* serial_key(SqlDialect d) {
  return d == SqlDialect::kSqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY";
}

const char* skip_locked(SqlDialect d) {
  return d == SqlDialect::kPostgres ? " FOR UPDATE SKIP LOCKED" : "";
}

const char* for_update(SqlDialect d) {
  return d == SqlDialect::kPostgres ? " FOR UPDATE" : "";
}

const char* least(SqlDialect d) {
  return d == SqlDialect::kPostgres ? "LEAST" : "MIN";
}

const char* greatest(SqlDialect d) {
  return d == SqlDialect::kPostgres ? "GREATEST" : "MAX";
}

int64_t sql_limit(int limit) {
  return limit < 0 ? std::numeric_limits<int64_t>::max() : limit;
}

int64_t sql_offset(int offset) {
  return offset < 0 ? 0 : offset;
}

std::string placeholder_list(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i ? ",?" : "?";
  return out;
}

std::string json_text(SqlDialect d, const std::string& column, const std::string& key) {
  return d == SqlDialect::kSqlite ? "json_extract(" + column + ", '$." + key + "')"
                                  : "(CAST(" + column + " AS jsonb) ->> '" + key + "')";
}

const char* table_exists_sql(SqlDialect d) {
  return d == SqlDialect::kSqlite
             ? "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
             : "SELECT 1 FROM information_schema.tables WHERE table_name = ? AND "
               "table_schema = current_schema()";
}

}  // namespace ootci
