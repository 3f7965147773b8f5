#include "store/migrations.h"

#include <string>

namespace ootci {
namespace {

// The two dialects differ only in the auto-increment key type, so one text serves both.
std::string v1(SqlDialect d) {
  std::string serial =
      d == SqlDialect::kSqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY";
  return R"(
CREATE TABLE deliveries (
  delivery_id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  action TEXT NOT NULL,
  head_sha TEXT NOT NULL,
  pr_number BIGINT NOT NULL,
  received_ms BIGINT NOT NULL,
  body TEXT NOT NULL
);
CREATE TABLE outbox (
  id )" + serial +
         R"(,
  delivery_id TEXT NOT NULL REFERENCES deliveries(delivery_id),
  repo TEXT NOT NULL,
  event_type TEXT NOT NULL,
  callback_token TEXT NOT NULL,
  status TEXT NOT NULL,
  leased INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  next_attempt_ms BIGINT NOT NULL,
  deadline_ms BIGINT NOT NULL,
  delivered_ms BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  UNIQUE (delivery_id, repo)
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_ms);
CREATE TABLE check_run_wanted (
  head_sha TEXT NOT NULL,
  repo TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (head_sha, repo)
);
)";
}

}  // namespace

const std::vector<std::string>& migrations(SqlDialect dialect) {
  static const std::vector<std::string> sqlite = {v1(SqlDialect::kSqlite)};
  static const std::vector<std::string> postgres = {v1(SqlDialect::kPostgres)};
  return dialect == SqlDialect::kSqlite ? sqlite : postgres;
}

}  // namespace ootci
