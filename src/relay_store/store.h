#pragma once
// The relay's persistent state: one database (SQLite or PostgreSQL) and its areas, each a small
// class over it. Callers take the area they need. Every method is thread-safe, and both dialects
// pass one test suite (store_test.cc).
#include <memory>
#include <string>

#include "relay_store/job_store.h"
#include "relay_store/level_store.h"
#include "relay_store/outbox_store.h"
#include "relay_store/records.h"
#include "relay_store/shared_state.h"
#include "relay_store/task_queue.h"
#include "sql/sql_db.h"

namespace ootci {

class Store {
 public:
  // Applies pending migrations.
  explicit Store(std::unique_ptr<SqlDb> db);

  int schema_version();

 private:
  std::unique_ptr<SqlDb> db_;  // declared first: the areas below hold it

 public:
  OutboxStore outbox;  // accepted webhooks and their dispatches
  JobStore jobs;       // downstream jobs, the HUD's rollups and reads
  TaskQueue tasks;     // side effects retried until done
  LevelStore levels;   // level history and pending demotions
  SharedState shared;  // what replicas coordinate through
};

// "sqlite:PATH" or a "postgresql://" / "postgres://" URI.
std::unique_ptr<Store> open_store(const std::string& uri);

}  // namespace ootci
