#pragma once
// What the relay store's areas share inside: each record type's column table, the advisory lock
// keys, claim leases, and the task insert that jobs and the task queue both run. Not for callers.
#include <cstdint>
#include <string>
#include <vector>

#include "relay_store/records.h"
#include "sql/record_columns.h"
#include "sql/sql_db.h"

namespace ootci {

const RecordColumns<OutboxItem>& outbox_columns();
const RecordColumns<JobRecord>& job_columns();
// The columns a job's rollup contribution depends on.
const RecordColumns<JobRecord>& rollup_columns();
const RecordColumns<TaskItem>& task_columns();
const RecordColumns<Demotion>& demotion_columns();

// Serializes task claims, and task inserts against claims (see insert_tasks and claim_tasks).
constexpr int64_t kTaskLockKey = 0x6f6f74636974;  // "ootcit"
// Serializes record_level's read-then-append across replicas.
constexpr int64_t kLevelLockKey = 0x6f6f74636976;  // "ootciv"
// With a repo's hash in the low bits: serializes one repo's callback rate checks across replicas.
constexpr int64_t kRateLockKey = 0x6f6f746372000000;  // "ootcr" << 24
// With a hash of (repo, run, job) in the low bits: serializes the attempts of one nightly job.
constexpr int64_t kAttemptLockKey = 0x6f6f746361000000;  // "ootca" << 24

// FNV-1a: the same value in every replica, which std::hash does not promise.
int64_t stable_hash24(const std::string& s);

// A claim's lease: the rows it leased can be completed only with it. 128 random bits, so two
// replicas (or two claims of one process) never hold the same one.
std::string lease_token();

// Inserts pending tasks in tx (see TaskQueue::enqueue_tasks).
void insert_tasks(SqlTx& tx, const std::vector<TaskItem>& tasks);

int64_t read_i64(const SqlRow& r);

}  // namespace ootci
