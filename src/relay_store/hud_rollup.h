#pragma once
// The HUD's rollups: what each job adds to the per-hour counts and the per-day end-to-end
// histogram, so the aggregate pages read a few hundred rollup rows instead of every job in their
// window. Pure: the store writes the deltas in the transaction that writes the jobs.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "relay_store/records.h"

namespace ootci {

constexpr int64_t kRollupHourMs = 3600000;
constexpr int64_t kRollupDayMs = 86400000;
// End-to-end times are kept to the tenth of a minute, the HUD's display precision.
constexpr int64_t kE2eBucketMs = 6000;
// Execution above this is an overrun (the L3 criterion "jobs over 3 h").
constexpr int64_t kOverrunMs = 3 * kRollupHourMs;

// A job's class for the HUD's two tabs: "pr" (pull_request, push), "nightly" (nightly,
// periodic), "other" (every other event type, shown in neither).
const char* job_class(const std::string& event_type);
const char* job_class(JobFilter filter);
// The event types of a filter's class.
const std::vector<std::string>& event_types(JobFilter filter);
// The same mapping as an SQL expression over the jobs table's event_type column.
std::string job_class_sql();
// The event types of a filter, as an SQL list: ('pull_request','push').
std::string event_types_sql(JobFilter filter);

// The bucket of an end-to-end time: its value rounded to the tenth of a minute, as the HUD shows
// it (round half up, like std::round on a positive value).
int64_t e2e_bucket(int64_t e2e_ms);
// The same over the jobs table's queue_time_ms and execution_time_ms columns.
const char* e2e_bucket_sql();

// The p-th percentile of a histogram, as the element ceil(p·n)-1 of the sorted values (to the
// histogram's tenth of a minute), in milliseconds; -1 without values.
int64_t percentile_ms(const std::vector<E2eBucket>& histogram, double p);

// The first whole hour at or after `ms` (ms ≥ 0): rollup hours from there on are entirely inside
// a window that starts at `ms`; [ms, that hour) is read from the job rows.
int64_t first_whole_hour(int64_t ms);
int64_t first_whole_day(int64_t ms);

// One hourly rollup row's change.
struct HourDelta {
  std::string level;  // the highest level added ("" adds none); rollups keep the maximum
  int64_t jobs = 0, success = 0, failure = 0, timed_out = 0, cancelled = 0, in_progress = 0;
  int64_t queue_sum_ms = 0, queue_n = 0, exec_sum_ms = 0, exec_n = 0, overruns = 0;
  int64_t prs_last = 0;  // PRs whose newest job moved into (+1) or out of (-1) this hour
  int64_t first_ms = INT64_MAX, last_ms = INT64_MIN;  // kept as minimum and maximum
  int64_t exec_max_ms = -1;                           // kept as maximum
  int64_t failure_upstream = 0;

  // Changes nothing: no count moves and no level is added.
  bool is_empty() const;
};

struct RollupDeltas {
  // (class, hour, repo): the hourly table's key order.
  std::map<std::tuple<std::string, int64_t, std::string>, HourDelta> hours;
  // (repo, day, bucket) → jobs.
  std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> e2e;
  // Hours whose level, first_ms, last_ms and exec_max_ms are read again from their job rows.
  std::set<std::tuple<std::string, int64_t, std::string>> recount;

  // Adds (sign +1) or removes (sign -1) a job's counts; a superseded job counts nothing. Removal
  // leaves the hour's level, first_ms, last_ms and exec_max_ms as they were: a job keeps its
  // created_ms, and its execution only ever gets measured, so its hour keeps those.
  void add_job(const JobRecord& job, int sign);
  // A nightly attempt a later one superseded: its counts leave its hour, which is recounted.
  void supersede(const JobRecord& job);
  // A PR's newest job moved from old_last_ms (-1: the PR is new) to new_last_ms.
  void move_pr(const std::string& repo, const std::string& cls, int64_t old_last_ms,
               int64_t new_last_ms);
  bool empty() const { return hours.empty() && e2e.empty(); }
};

}  // namespace ootci
