#pragma once
// The relay store's task queue: durable side effects of callbacks and webhooks (check runs,
// re-runs, HUD forwards), retried until done, one at a time per ordering key.
#include <cstdint>
#include <string>
#include <vector>

#include "relay_store/records.h"
#include "sql/sql_db.h"

namespace ootci {

class TaskQueue {
 public:
  explicit TaskQueue(SqlDb& db) : db_(db) {}

  void enqueue_tasks(const std::vector<TaskItem>& tasks);
  // Leases up to `limit` due pending tasks, each the oldest pending task of its ordering_key.
  std::vector<TaskItem> claim_tasks(int64_t now_ms, int limit, int64_t lease_ms);
  // Each changes the task only while the claim that returned it still holds it.
  bool complete_task(const TaskItem& leased, int attempts);
  bool retry_task(const TaskItem& leased, int attempts, int64_t next_attempt_ms,
                  const std::string& error);
  bool fail_task(const TaskItem& leased, int attempts, const std::string& error);
  TaskCounts task_counts();

  // Every task of one kind, in id order, whatever its status (tests and tools; the relay never
  // lists tasks by kind).
  std::vector<TaskItem> tasks_of_kind(const std::string& kind);

 private:
  SqlDb& db_;
};

}  // namespace ootci
