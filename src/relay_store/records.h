#pragma once
// The relay's stored records: what each table of the relay store holds, as the callers see it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/job_status.h"

namespace ootci {

// One accepted upstream webhook. `body` is the raw request body, kept verbatim because it is
// forwarded verbatim as client_payload.payload.
struct DeliveryRecord {
  std::string delivery_id;
  std::string event;  // X-GitHub-Event
  std::string action;
  std::string head_sha;
  int64_t pr_number = 0;
  int64_t received_ms = 0;
  std::string body;
  // Repos that want check runs for head_sha (set_check_run_wanted), stored with the delivery.
  std::vector<std::string> check_run_repos;
};

enum class OutboxStatus { kPending, kDelivered, kFailed };
const char* to_string(OutboxStatus s);
// The stored text's status; text this relay does not know reads as pending, so the sender retries
// it rather than losing it.
OutboxStatus parse_outbox_status(std::string_view text);

// One dispatch to one downstream repo. The row is the relay's DISPATCHED record.
struct OutboxItem {
  int64_t id = 0;
  std::string delivery_id;
  std::string repo;
  std::string event_type;
  std::string callback_token;
  OutboxStatus status = OutboxStatus::kPending;
  int attempts = 0;
  int64_t created_ms = 0;
  int64_t next_attempt_ms = 0;
  int64_t deadline_ms = 0;
  int64_t delivered_ms = 0;
  std::string last_error;
  std::string lease;  // the claim that holds the row (claim_due); "" when none does
};

// What became of one attempt at a leased row.
struct OutboxOutcome {
  enum Kind { kDelivered, kRetry, kFailed } kind = kDelivered;
  OutboxItem item;  // as claimed: its id and lease
  int attempts = 0;
  int64_t at_ms = 0;  // delivered at, or due again at (a retry)
  std::string error;
};

struct OutboxCounts {
  int64_t pending = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
};

// A stored job's status: text this relay does not know reads as in_progress, so the sweeper
// times the job out rather than the HUD failing on it.
JobStatus parse_stored_job_status(std::string_view text);

// A job's conclusion as its callback gave it. The relay counts four words, so those are an enum;
// CRCR passes any other text on (GitHub also has neutral, skipped, startup_failure, ...), and it
// is kept as it came, as kOther with its text.
class JobConclusion {
 public:
  enum Kind { kNone, kSuccess, kFailure, kTimedOut, kCancelled, kOther };
  JobConclusion() = default;
  JobConclusion(Kind kind);                      // one of the words: kOther has no text of its own
  static JobConclusion parse(std::string text);  // "": kNone
  Kind kind() const { return kind_; }
  // As it came ("" for kNone): what replies, check runs, the HUD and the store write.
  const std::string& text() const { return text_; }
  bool operator==(Kind kind) const { return kind_ == kind; }
  bool operator==(const JobConclusion&) const = default;

 private:
  Kind kind_ = kNone;
  std::string text_;
};

// One downstream job as the callback state machine sees it, keyed by CRCR's
// delivery:repo:run_id:run_attempt:job_name. Times are relay wall-clock milliseconds; -1 is null.
struct JobRecord {
  std::string key;
  std::string delivery_id;
  std::string repo;
  std::string run_id;  // as the callback gave it: GitHub's integer or a Buildkite build UUID
  int64_t run_attempt = 1;
  std::string job_name;
  std::string workflow_name;
  std::string event_type;  // pull_request, push, nightly, periodic
  std::string head_sha;
  int64_t pr_number = 0;
  std::string level;  // the repo's level when the callback arrived, e.g. "L2"
  JobStatus status = JobStatus::kInProgress;
  JobConclusion conclusion;
  int64_t dispatched_ms = -1;
  int64_t in_progress_ms = -1;
  int64_t completed_ms = -1;
  int64_t queue_time_ms = -1;
  int64_t execution_time_ms = -1;
  // sha256 of the applied in_progress and completed bodies: an exact repeat is a safe retry.
  std::string in_progress_hash;
  std::string completed_hash;
  int64_t tests_passed = 0;
  int64_t tests_failed = 0;
  int64_t tests_skipped = 0;
  int64_t tests_total = 0;
  std::string workflow_url;
  std::string check_run_id;
  std::string artifact_url;
  bool check_run_created = false;  // an upstream check run exists for this job
  std::string last_body;           // the last applied callback body, verbatim (untrusted)
  std::string failed_tests_json;   // capped failed_tests_detail, or ""
  std::string triage_json;         // validated triage_verdict, or ""
  // The verdict's category and confidence, for the verdict-aware pass rate ("" without one).
  std::string verdict_category;
  std::string verdict_confidence;
  int64_t created_ms = 0;  // relay time of the job's first callback: the HUD's time axis
  // A nightly or periodic attempt a later attempt of the same run and job replaced: kept, but
  // counted nowhere (the nightly summary counts the latest attempt only, test-infra#8832). The
  // store sets it; writers leave it false.
  bool superseded = false;
};

// The failure a high-confidence triage verdict blames on upstream: the verdict-aware pass rate
// leaves it out (test-infra#8673).
bool upstream_caused(const JobRecord& job);

// HUD aggregates. `pr` jobs are pull_request and push; `nightly` jobs are nightly and periodic.
enum class JobFilter { kPullRequest, kNightly };

struct RepoStats {
  std::string repo;
  std::string level;  // the highest level seen in the window
  int64_t jobs = 0, success = 0, failure = 0, timed_out = 0, cancelled = 0, in_progress = 0;
  int64_t prs = 0;  // distinct PR numbers among the window's jobs
  int64_t queue_sum_ms = 0, queue_n = 0;
  int64_t exec_sum_ms = 0, exec_n = 0;
  int64_t overruns = 0;  // execution over 3 h
  int64_t first_ms = 0, last_ms = 0;
  int64_t exec_max_ms = -1;      // the longest execution; -1 when none was measured
  int64_t failure_upstream = 0;  // failures whose verdict blames upstream (upstream_caused)
};

struct DailyStats {
  std::string repo;
  int64_t day = 0;  // days since the epoch (UTC)
  int64_t jobs = 0, success = 0, failure = 0;
};

// The end-to-end times of a window: `jobs` jobs took tenth_min tenths of a minute (rounded).
struct E2eBucket {
  int64_t tenth_min = 0;
  int64_t jobs = 0;
  bool operator==(const E2eBucket&) const = default;
};

enum class TaskStatus { kPending, kDone, kFailed };
const char* to_string(TaskStatus s);
// Text this relay does not know reads as failed: a task it cannot read is not run again.
TaskStatus parse_task_status(std::string_view text);

// A durable side effect of a callback or webhook (check run, re-run, HUD forward), retried until
// done. Tasks sharing an ordering_key run one at a time in id order, so an in_progress check run
// never lands after its completed one.
struct TaskItem {
  int64_t id = 0;
  std::string kind;
  std::string ordering_key;
  std::string payload;  // JSON
  int attempts = 0;
  int64_t created_ms = 0;
  int64_t next_attempt_ms = 0;
  TaskStatus status = TaskStatus::kPending;
  std::string last_error;
  std::string lease;  // the claim that holds the task (claim_tasks); "" when none does
};

// A pending demotion of an L3 repo: its demotion PR is open upstream. While it is, the relay
// creates no new upstream check runs for the repo (check_runs_suppressed).
struct Demotion {
  std::string repo;
  int64_t since_ms = 0;  // when a sweep first saw the PR open; kept while it stays open
  int64_t pr_number = 0;
  std::string pr_url;
};

struct TaskCounts {
  int64_t pending = 0;
  int64_t done = 0;
  int64_t failed = 0;
};

}  // namespace ootci
