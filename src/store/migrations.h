#pragma once
#include <string>
#include <vector>

namespace ootci {

enum class SqlDialect { kSqlite, kPostgres };

// Versioned schema: migration i (1-based) takes the schema from version i-1 to i. Append only;
// never edit a migration that has shipped.
const std::vector<std::string>& migrations(SqlDialect dialect);

}  // namespace ootci
