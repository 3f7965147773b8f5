#include "relay_store/hud_rollup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ootci {

const std::vector<std::string>& event_types(JobFilter filter) {
  static const std::vector<std::string> pr = {"pull_request", "push"};
  static const std::vector<std::string> nightly = {"nightly", "periodic"};
  return filter == JobFilter::kNightly ? nightly : pr;
}

const char* job_class(JobFilter filter) {
  return filter == JobFilter::kNightly ? "nightly" : "pr";
}

const char* job_class(const std::string& event_type) {
  for (JobFilter f : {JobFilter::kPullRequest, JobFilter::kNightly})
    for (const std::string& e : event_types(f))
      if (e == event_type) return job_class(f);
  return "other";
}

std::string event_types_sql(JobFilter filter) {
  std::string out;
  for (const std::string& e : event_types(filter)) out += (out.empty() ? "('" : ",'") + e + "'";
  return out + ")";
}

std::string job_class_sql() {
  std::string out = "CASE";
  for (JobFilter f : {JobFilter::kPullRequest, JobFilter::kNightly})
    out += fmt::format(" WHEN event_type IN {} THEN '{}'", event_types_sql(f), job_class(f));
  return out + " ELSE 'other' END";
}

int64_t e2e_bucket(int64_t e2e_ms) {
  return (e2e_ms + kE2eBucketMs / 2) / kE2eBucketMs;
}

const char* e2e_bucket_sql() {
  // Both columns are BIGINT: / is integer division in both dialects.
  return "(queue_time_ms + execution_time_ms + 3000) / 6000";
}

int64_t percentile_ms(const std::vector<E2eBucket>& histogram, double p) {
  int64_t n = 0;
  for (const auto& b : histogram) n += b.jobs;
  if (n == 0) return -1;
  int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p * n)));
  for (const auto& b : histogram) {
    rank -= b.jobs;
    if (rank <= 0) return b.tenth_min * kE2eBucketMs;
  }
  return histogram.back().tenth_min * kE2eBucketMs;
}

int64_t first_whole_hour(int64_t ms) {
  return (std::max<int64_t>(ms, 0) + kRollupHourMs - 1) / kRollupHourMs;
}

int64_t first_whole_day(int64_t ms) {
  return (std::max<int64_t>(ms, 0) + kRollupDayMs - 1) / kRollupDayMs;
}

bool HourDelta::is_empty() const {
  return level.empty() && jobs == 0 && success == 0 && failure == 0 && timed_out == 0 &&
         cancelled == 0 && in_progress == 0 && queue_sum_ms == 0 && queue_n == 0 &&
         exec_sum_ms == 0 && exec_n == 0 && overruns == 0 && prs_last == 0 && exec_max_ms < 0 &&
         failure_upstream == 0;
}

void RollupDeltas::add_job(const JobRecord& j, int sign) {
  if (j.superseded) return;
  HourDelta& h = hours[{job_class(j.event_type), j.created_ms / kRollupHourMs, j.repo}];
  if (sign > 0) {
    h.level = std::max(h.level, j.level);
    h.first_ms = std::min(h.first_ms, j.created_ms);
    h.last_ms = std::max(h.last_ms, j.created_ms);
    h.exec_max_ms = std::max(h.exec_max_ms, j.execution_time_ms);
  }
  h.failure_upstream += sign * upstream_caused(j);
  h.jobs += sign;
  h.success += sign * (j.conclusion == JobConclusion::kSuccess);
  h.failure += sign * (j.conclusion == JobConclusion::kFailure);
  h.timed_out += sign * (j.conclusion == JobConclusion::kTimedOut);
  h.cancelled += sign * (j.conclusion == JobConclusion::kCancelled);
  h.in_progress += sign * (j.status == JobStatus::kInProgress);
  if (j.queue_time_ms >= 0) h.queue_sum_ms += sign * j.queue_time_ms, h.queue_n += sign;
  if (j.execution_time_ms >= 0) h.exec_sum_ms += sign * j.execution_time_ms, h.exec_n += sign;
  h.overruns += sign * (j.execution_time_ms > kOverrunMs);
  if (j.queue_time_ms >= 0 && j.execution_time_ms >= 0)
    e2e[{j.repo, j.created_ms / kRollupDayMs, e2e_bucket(j.queue_time_ms + j.execution_time_ms)}] +=
        sign;
}

void RollupDeltas::supersede(const JobRecord& j) {
  add_job(j, -1);
  recount.insert({job_class(j.event_type), j.created_ms / kRollupHourMs, j.repo});
}

void RollupDeltas::move_pr(const std::string& repo, const std::string& cls, int64_t old_last_ms,
                           int64_t new_last_ms) {
  if (old_last_ms >= 0) hours[{cls, old_last_ms / kRollupHourMs, repo}].prs_last -= 1;
  hours[{cls, new_last_ms / kRollupHourMs, repo}].prs_last += 1;
}

}  // namespace ootci
