#include "testing/store_inspect.h"

#include "sql/sql_db.h"

namespace ootci {

std::vector<TaskItem> tasks_of_kind(const std::string& uri, const std::string& kind) {
  auto db =
      uri.rfind("sqlite:", 0) == 0 ? open_sqlite_db(uri.substr(7), 5000) : open_postgres_db(uri, 1);
  return db->read("tasks_of_kind", [&](SqlTx& tx) {
    return tx.all(
        "SELECT id, kind, ordering_key, payload, attempts, created_ms, next_attempt_ms, status, "
        "last_error, lease FROM tasks WHERE kind = ? ORDER BY id",
        {kind}, [](const SqlRow& r) {
          TaskItem t;
          t.id = r.i64(0);
          t.kind = r.text(1);
          t.ordering_key = r.text(2);
          t.payload = r.text(3);
          t.attempts = static_cast<int>(r.i64(4));
          t.created_ms = r.i64(5);
          t.next_attempt_ms = r.i64(6);
          t.status = r.text(7);
          t.last_error = r.text(8);
          t.lease = r.text(9);
          return t;
        });
  });
}

}  // namespace ootci
