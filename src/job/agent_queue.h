#pragma once
// The agent's durable job queue in SQLite: a dispatch is committed before the agent answers
// 202, so a restart loses nothing, and a job that was running resumes (docs/dispatch.md).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evidence/run_status.h"
#include "sql/sql_db.h"

namespace ootci {

// queued -> running -> done | cancelled; skipped when the gate says no build. Stored and shown
// as text (agent_queue.cc's table).
enum class JobState { kQueued, kRunning, kDone, kCancelled, kSkipped };
std::string to_string(JobState state);

struct AgentJob {
  int64_t id = 0;
  std::string delivery_id;
  std::string event_type;
  std::string client_payload;  // JSON text as received
  std::string supersede_key;
  bool should_build = false;
  std::string reason;  // the gate's
  std::string upstream_sha;
  int64_t pr_number = 0;
  JobState state = JobState::kQueued;
  int attempt = 1;     // workflow.run_attempt; a retried job keeps its identity
  std::string run_id;  // the evidence run, chosen before it starts so a restart can resume it
  bool in_progress_reported = false;
  std::optional<Conclusion> conclusion;  // once ended: success, failure or cancelled
  std::string error;  // what went wrong outside the tests (prepare, report, spawn)
  int64_t received_ms = 0;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  std::string base_sha;  // the gate's: an open PR's base, for a staged selection; "" otherwise
};

class AgentQueue {
 public:
  explicit AgentQueue(const std::string& path);
  ~AgentQueue();
  AgentQueue(const AgentQueue&) = delete;
  AgentQueue& operator=(const AgentQueue&) = delete;

  // Stores a new job and returns its id. A redelivery (same delivery_id and event) returns the
  // existing job's id and false.
  std::pair<int64_t, bool> add(const AgentJob& job);
  // Jobs older than `newer_id` with the same supersede key that are still queued become
  // cancelled; returns the ids of those that are running, for the caller to stop.
  std::vector<int64_t> supersede(const std::string& key, int64_t newer_id, int64_t now);
  // The oldest queued job, now running; nullopt when none.
  std::optional<AgentJob> claim(int64_t now);
  // After a restart: running jobs go back to the queue (keeping run_id and what was reported).
  int requeue_running();
  void set_run(int64_t id, const std::string& run_id);
  void set_in_progress_reported(int64_t id);
  // Ends a job unless it is already cancelled (a supersede won the race); returns its state.
  JobState finish(int64_t id, JobState state, Conclusion conclusion, const std::string& error,
                  int64_t now);
  std::optional<AgentJob> get(int64_t id);
  std::vector<AgentJob> recent(int limit);
  std::map<std::string, int64_t> count_by_state();

 private:
  std::unique_ptr<SqlDb> db_;
};

}  // namespace ootci
