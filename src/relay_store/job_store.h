#pragma once
// The relay store's jobs: each downstream job as the callback state machine sees it, the HUD's
// hourly rollups written in the same transactions, and the HUD's reads over both.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "relay_store/records.h"
#include "sql/sql_db.h"

namespace ootci {

struct RollupDeltas;

class JobStore {
 public:
  explicit JobStore(SqlDb& db);

  // insert_job and update_job commit the job and its tasks in one transaction. insert_job
  // returns false (writing nothing) if the key exists; update_job returns false (writing nothing)
  // unless the stored status equals expected_status.
  std::optional<JobRecord> get_job(const std::string& key);
  bool insert_job(const JobRecord& job, const std::vector<TaskItem>& tasks);
  // With expected_check_run_created, the flag must match too: a label backfill and a callback
  // that both read the job then cannot overwrite each other's check-run decision.
  bool update_job(const JobRecord& job, JobStatus expected_status,
                  const std::vector<TaskItem>& tasks,
                  std::optional<bool> expected_check_run_created = std::nullopt);
  std::vector<JobRecord> jobs_for_sha(const std::string& head_sha);
  // in_progress jobs whose in_progress_ms is before the cutoff, oldest first.
  std::vector<JobRecord> overdue_jobs(int64_t in_progress_before_ms, int limit);
  // How many in_progress jobs started before the cutoff (the health probe's overdue count).
  int64_t count_overdue_jobs(int64_t in_progress_before_ms);
  std::vector<JobRecord> jobs_for_pr(int64_t pr_number);

  // HUD reads. A window is every job created at or after since_ms: the HUD's windows all end now.
  // The aggregates read the hourly rollups for the window's whole hours and job rows only for the
  // part of an hour before the first of them.
  // One row per repo; only `repo`'s row when it is given.
  std::vector<RepoStats> repo_stats(int64_t since_ms, JobFilter filter,
                                    const std::string& repo = "");
  std::vector<DailyStats> daily_stats(int64_t since_ms, JobFilter filter);
  // PR numbers of `repo`'s pull_request and push jobs in the window, newest job first; *total
  // gets the count.
  std::vector<int64_t> repo_prs(const std::string& repo, int64_t since_ms, int limit, int offset,
                                int64_t* total);
  // The window's jobs of those PRs: a PR's older jobs are not in its row of the window's matrix.
  std::vector<JobRecord> repo_jobs_for_prs(const std::string& repo, const std::vector<int64_t>& prs,
                                           int64_t since_ms);
  // Newest first, for views without PRs (nightly).
  std::vector<JobRecord> recent_jobs(const std::string& repo, int64_t since_ms, JobFilter filter,
                                     int limit, int offset, int64_t* total);
  // queue + execution of every job with both measured, as counts per tenth of a minute (the
  // value rounded as the HUD shows it), ascending.
  std::vector<E2eBucket> e2e_histogram(const std::string& repo, int64_t since_ms);
  // The newest job of each repo in the class, from the rollups: repo → created_ms.
  std::map<std::string, int64_t> last_job_ms(JobFilter filter);

  // Retention: deletes up to `limit` completed jobs created before before_ms, in one transaction,
  // keeping their rollups, and records before_ms as where job detail now begins
  // (detail_since). The call that deletes fewer than `limit` (the pass's last) also forgets the
  // PRs whose newest job was before before_ms. Returns how many jobs it deleted.
  int64_t prune_jobs(int64_t before_ms, int limit);
  // Where pruning has left job rows (0: nothing was ever pruned).
  int64_t detail_since();

  // Demo data (`ootci relay seed`), benchmarks and tests; the relay itself writes jobs one
  // callback at a time. Inserts the jobs and their rollups in one transaction; a key already
  // stored (or repeated in `jobs`) keeps its first row. Nightly attempts supersede each other as
  // insert_job's do.
  void insert_jobs_bulk(const std::vector<JobRecord>& jobs);

 private:
  bool insert_one(SqlTx& tx, const JobRecord& job, RollupDeltas& deltas);
  std::vector<RepoStats> stats_since(SqlTx& tx, int64_t since_ms, JobFilter filter,
                                     const std::string& repo);
  void track_prs(SqlTx& tx, const std::vector<const JobRecord*>& jobs, RollupDeltas& deltas);
  void write_rollups(SqlTx& tx, const RollupDeltas& deltas);

  SqlDb& db_;
  SqlDialect d_;
  std::string hour_upsert_sql_;
};

}  // namespace ootci
