#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  std::string level;   // the repo's level when the callback arrived, e.g. "L2"
  std::string status;  // in_progress or completed
  std::string conclusion;
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

// The relay's persistent state. SQLite and PostgreSQL implement it and pass one test suite
// (store_test.cc). All methods are thread-safe.
class Store {
 public:
  virtual ~Store() = default;

  virtual int schema_version() = 0;

  // Commits the delivery, its outbox rows and its check-run wishes in one transaction. Returns
  // false, writing nothing, when the delivery id is already stored (a webhook redelivery).
  virtual bool accept_delivery(const DeliveryRecord& delivery,
                               const std::vector<OutboxItem>& outbox) = 0;
  // Without the body (empty) when with_body is false: callbacks need only the commit and PR.
  virtual std::optional<DeliveryRecord> get_delivery(const std::string& delivery_id,
                                                     bool with_body = true) = 0;

  // Leases up to `limit` pending rows that are due at `now_ms`: they are not due again until
  // now_ms + lease_ms, so a crashed worker's rows come back by themselves. Each row carries the
  // claim's lease, a token no other claim (of any replica) gets.
  virtual std::vector<OutboxItem> claim_due(int64_t now_ms, int limit, int64_t lease_ms) = 0;
  // Records attempts' outcomes on rows claim_due returned, all in one transaction (a busy
  // dispatcher settles what its workers finished meanwhile in one commit). Each changes its row
  // only while that claim still holds it: a worker whose lease ran out, and whose row another
  // worker took over, changes nothing (false at its index), whatever the other worker did.
  virtual std::vector<bool> settle_outbox(const std::vector<OutboxOutcome>& outcomes) = 0;
  // Makes every leased row due now. Only safe when no other process uses the store (SQLite).
  virtual void release_leases(int64_t now_ms) = 0;
  // Earliest next_attempt_ms among pending rows, if any.
  virtual std::optional<int64_t> next_due_ms() = 0;

  virtual std::vector<OutboxItem> outbox_for(const std::string& delivery_id) = 0;
  virtual OutboxCounts outbox_counts() = 0;

  // L3 "create check runs for this commit" wish (CRCR's crcr:check_run_wanted).
  virtual void set_check_run_wanted(const std::string& head_sha, const std::string& repo,
                                    int64_t now_ms) = 0;
  virtual bool check_run_wanted(const std::string& head_sha, const std::string& repo) = 0;

  // The DISPATCHED record of (delivery, repo): its outbox row.
  virtual std::optional<OutboxItem> dispatch_record(const std::string& delivery_id,
                                                    const std::string& repo) = 0;

  // Callback state. insert_job and update_job commit the job and its tasks in one transaction.
  // insert_job returns false (writing nothing) if the key exists; update_job returns false
  // (writing nothing) unless the stored status equals expected_status.
  virtual std::optional<JobRecord> get_job(const std::string& key) = 0;
  virtual bool insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks) = 0;
  // With expected_check_run_created, the flag must match too: a label backfill and a callback
  // that both read the job then cannot overwrite each other's check-run decision.
  virtual bool update_job(const JobRecord& job, const std::string& expected_status,
                          const std::vector<TaskItem>& tasks,
                          std::optional<bool> expected_check_run_created = std::nullopt) = 0;
  virtual std::vector<JobRecord> jobs_for_sha(const std::string& head_sha) = 0;
  // in_progress jobs whose in_progress_ms is before the cutoff, oldest first.
  virtual std::vector<JobRecord> overdue_jobs(int64_t in_progress_before_ms, int limit) = 0;
  // How many in_progress jobs started before the cutoff (the health probe's overdue count).
  virtual int64_t count_overdue_jobs(int64_t in_progress_before_ms) = 0;

  virtual void enqueue_tasks(const std::vector<TaskItem>& tasks) = 0;
  // Leases up to `limit` due pending tasks, each the oldest pending task of its ordering_key.
  virtual std::vector<TaskItem> claim_tasks(int64_t now_ms, int limit, int64_t lease_ms) = 0;
  // As mark_*: only while the claim that returned the task still holds it.
  virtual bool complete_task(const TaskItem& leased, int attempts) = 0;
  virtual bool retry_task(const TaskItem& leased, int attempts, int64_t next_attempt_ms,
                          const std::string& error) = 0;
  virtual bool fail_task(const TaskItem& leased, int attempts, const std::string& error) = 0;
  virtual TaskCounts task_counts() = 0;

  // HUD reads. A window is every job created at or after since_ms: the HUD's windows all end now.
  // The aggregates read the hourly rollups for the window's whole hours and job rows only for the
  // part of an hour before the first of them.
  // One row per repo; only `repo`'s row when it is given.
  virtual std::vector<RepoStats> repo_stats(int64_t since_ms, JobFilter filter,
                                            const std::string& repo = "") = 0;
  virtual std::vector<DailyStats> daily_stats(int64_t since_ms, JobFilter filter) = 0;
  // PR numbers of `repo`'s pull_request and push jobs in the window, newest job first; *total
  // gets the count.
  virtual std::vector<int64_t> repo_prs(const std::string& repo, int64_t since_ms, int limit,
                                        int offset, int64_t* total) = 0;
  // The window's jobs of those PRs: a PR's older jobs are not in its row of the window's matrix.
  virtual std::vector<JobRecord> repo_jobs_for_prs(const std::string& repo,
                                                   const std::vector<int64_t>& prs,
                                                   int64_t since_ms) = 0;
  // Newest first, for views without PRs (nightly).
  virtual std::vector<JobRecord> recent_jobs(const std::string& repo, int64_t since_ms,
                                             JobFilter filter, int limit, int offset,
                                             int64_t* total) = 0;
  // queue + execution of every job with both measured, as counts per tenth of a minute (the
  // value rounded as the HUD shows it), ascending.
  virtual std::vector<E2eBucket> e2e_histogram(const std::string& repo, int64_t since_ms) = 0;
  virtual std::vector<JobRecord> jobs_for_pr(int64_t pr_number) = 0;
  // Retention: deletes up to `limit` completed jobs created before before_ms, in one transaction,
  // keeping their rollups, and records before_ms as where job detail now begins
  // (detail_since). The call that deletes fewer than `limit` (the pass's last) also forgets the
  // PRs whose newest job was before before_ms. Returns how many jobs it deleted.
  virtual int64_t prune_jobs(int64_t before_ms, int limit) = 0;
  // Where pruning has left job rows (0: nothing was ever pruned).
  virtual int64_t detail_since() = 0;
  // The newest job of each repo in the class, from the rollups: repo → created_ms.
  virtual std::map<std::string, int64_t> last_job_ms(JobFilter filter) = 0;
  // Level tenure: record_level appends only when the level changed; level_since is when the
  // current run at `level` began.
  virtual void record_level(const std::string& repo, const std::string& level, int64_t now_ms) = 0;
  virtual std::optional<int64_t> level_since(const std::string& repo, const std::string& level) = 0;
  // When the repo first reached `level` (its tenure counts from there, as upstream's does).
  virtual std::optional<int64_t> first_at_level(const std::string& repo,
                                                const std::string& level) = 0;

  // Pending demotions (see Demotion). set_demotion keeps the first since_ms of an open PR.
  virtual std::vector<Demotion> demotions() = 0;
  virtual std::optional<Demotion> demotion(const std::string& repo) = 0;
  virtual void set_demotion(const Demotion& demotion) = 0;
  virtual void clear_demotion(const std::string& repo) = 0;

  // A periodic job that one replica runs at a time: true (and recorded) for the first caller
  // once `interval_ms` has passed since the last run named `name`, false for every other.
  virtual bool run_due(const std::string& name, int64_t now_ms, int64_t interval_ms) = 0;
  // Claims the redelivery of one GitHub webhook delivery (by its X-GitHub-Delivery guid): true
  // unless it was requested less than min_gap_ms ago or max_attempts times already, so replicas
  // and passes do not ask for one delivery twice.
  virtual bool claim_redelivery(const std::string& guid, int64_t now_ms, int64_t min_gap_ms,
                                int max_attempts) = 0;

  // CRCR's per-key sliding window of `window_s` seconds, kept in the store so every replica
  // enforces one limit; its hits are counted per whole second, so a window's cost does not grow
  // with the limit. Returns 0 and counts the request if fewer than `limit` were counted in the
  // window; otherwise the seconds until a slot frees up (at least 1), counting nothing: a client
  // that backs off by Retry-After gets in as soon as it may.
  virtual int64_t rate_limit(const std::string& key, int64_t now_ms, int limit,
                             int64_t window_s) = 0;

  // Small shared values, e.g. the sweeper's heartbeat, visible to every replica.
  virtual void set_meta(const std::string& key, const std::string& value) = 0;
  virtual std::optional<std::string> get_meta(const std::string& key) = 0;
};

// "sqlite:PATH" or a "postgresql://" / "postgres://" URI. Applies pending migrations.
std::unique_ptr<Store> open_store(const std::string& uri);

}  // namespace ootci
