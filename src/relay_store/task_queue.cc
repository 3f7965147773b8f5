#include "relay_store/task_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "relay_store/store_sql.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// What a new task is written with; the rest are the table's defaults.
const RecordColumns<TaskItem>& new_task_columns() {
  static const RecordColumns<TaskItem> columns = task_columns().subset(
      {"kind", "ordering_key", "payload", "status", "created_ms", "next_attempt_ms"});
  ;
  return columns;
}

TaskItem read_task(const SqlRow& r) {
  return task_columns().read(r);
}

}  // namespace

// In PostgreSQL under the task lock, held until commit, so task ids become visible in id order:
// otherwise a later id of a key could commit first, be claimed, and then an earlier id of that
// key (committing late) would look like the oldest pending task and be claimed while the later
// one still runs.
void insert_tasks(SqlTx& tx, const std::vector<TaskItem>& tasks) {
  if (tasks.empty()) return;
  tx.lock(kTaskLockKey);
  std::string insert = fmt::format("INSERT INTO tasks ({}) VALUES ({})", new_task_columns().names(),
                                   new_task_columns().placeholders());
  for (TaskItem t : tasks) {
    t.status = TaskStatus::kPending;
    tx.exec(insert, new_task_columns().bind(t));
  }
}

void TaskQueue::enqueue_tasks(const std::vector<TaskItem>& tasks) {
  db_.write("enqueue_tasks", [&](SqlTx& tx) { insert_tasks(tx, tasks); });
}

std::vector<TaskItem> TaskQueue::claim_tasks(int64_t now_ms, int limit, int64_t lease_ms) {
  return db_.write("claim_tasks", [&](SqlTx& tx) {
    // PostgreSQL claimers serialize on the task lock (cheap at this task volume) so the
    // per-key "oldest pending" check never races another claimer's snapshot; a separate
    // statement, so the claim's READ COMMITTED snapshot is taken after the lock is held.
    tx.lock(kTaskLockKey);
    // Only the oldest pending task of each ordering key is eligible; a leased one blocks its
    // key.
    auto out = tx.all(
        fmt::format("UPDATE tasks SET leased = 1, lease = ?, next_attempt_ms = ? WHERE id IN "
                    "(SELECT t.id FROM tasks t WHERE t.status = 'pending' AND "
                    "t.next_attempt_ms <= ? AND NOT EXISTS (SELECT 1 FROM tasks e WHERE "
                    "e.ordering_key = t.ordering_key AND e.status = 'pending' AND "
                    "e.id < t.id) ORDER BY t.id LIMIT ?{}) RETURNING {}",
                    skip_locked(tx.dialect()), task_columns().names()),
        {lease_token(), now_ms + lease_ms, now_ms, sql_limit(limit)}, read_task);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
  });
}

bool TaskQueue::complete_task(const TaskItem& t, int attempts) {
  return db_.exec("complete_task",
                  "UPDATE tasks SET status = 'done', leased = 0, lease = '', attempts = ?, "
                  "last_error = '' WHERE id = ? AND lease = ? AND status = 'pending'",
                  {attempts, t.id, t.lease}) > 0;
}

bool TaskQueue::retry_task(const TaskItem& t, int attempts, int64_t next_ms,
                           const std::string& error) {
  return db_.exec("retry_task",
                  "UPDATE tasks SET leased = 0, lease = '', attempts = ?, next_attempt_ms = ?, "
                  "last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
                  {attempts, next_ms, error, t.id, t.lease}) > 0;
}

bool TaskQueue::fail_task(const TaskItem& t, int attempts, const std::string& error) {
  return db_.exec("fail_task",
                  "UPDATE tasks SET status = 'failed', leased = 0, lease = '', attempts = "
                  "?, last_error = ? WHERE id = ? AND lease = ? AND status = 'pending'",
                  {attempts, error, t.id, t.lease}) > 0;
}

TaskCounts TaskQueue::task_counts() {
  return db_.read("task_counts", [&](SqlTx& tx) {
    TaskCounts c;
    tx.each("SELECT status, COUNT(*) FROM tasks GROUP BY status", {}, [&](const SqlRow& r) {
      TaskStatus st = parse_task_status(r.text(0));
      (st == TaskStatus::kPending ? c.pending
       : st == TaskStatus::kDone  ? c.done
                                  : c.failed) += r.i64(1);
    });
    return c;
  });
}

std::vector<TaskItem> TaskQueue::tasks_of_kind(const std::string& kind) {
  return db_.all(
      "tasks_of_kind",
      fmt::format("SELECT {} FROM tasks WHERE kind = ? ORDER BY id", task_columns().names()),
      {kind}, read_task);
}

}  // namespace ootci
