#include "relay/check_runs.h"

#include <fmt/format.h>

#include "base/time.h"
#include "relay/task_runner.h"

namespace ootci {

bool wants_check_run(const AllowlistEntry& entry, const nlohmann::json& payload, bool wanted) {
  if (entry.level == Level::kL4) return true;
  if (entry.level != Level::kL3) return false;
  if (wanted) return true;
  auto p = "/pull_request/labels"_json_pointer;
  if (!payload.contains(p) || !payload.at(p).is_array()) return false;
  for (const auto& l : payload.at(p))
    if (l.is_object() && l.value("name", "") == "ciflow/crcr/" + entry.device) return true;
  return false;
}

std::string check_run_name(const JobRecord& job) {
  return fmt::format("crcr/{}/{}/{}", job.repo, job.workflow_name, job.job_name);
}

TaskItem check_run_task(const JobRecord& job, const std::string& upstream_repo, int64_t now_ms) {
  // Built from the verified repo and run id, as CRCR does; the callback's url is not trusted.
  std::string url = fmt::format("https://github.com/{}/actions/runs/{}", job.repo, job.run_id);
  bool done = job.status == JobStatus::kCompleted;
  std::string conclusion =
      job.conclusion == JobConclusion::kNone ? "neutral" : job.conclusion.text();
  std::string title = "In progress";
  if (done) {
    title = conclusion;
    title[0] = static_cast<char>(std::toupper(title[0]));
  }
  nlohmann::json body = {
      {"upstream_repo", upstream_repo},
      {"name", check_run_name(job)},
      {"head_sha", job.head_sha},
      {"status", to_string(job.status)},
      {"details_url", url},
      {"external_id", job.pr_number ? fmt::format("{}:{}", job.run_id, job.pr_number) : job.run_id},
      {"output", {{"title", title}, {"summary", fmt::format("{} workflow: {}", job.repo, url)}}}};
  if (done) {
    body["conclusion"] = conclusion;
    body["completed_at"] = iso8601_utc(job.completed_ms > 0 ? job.completed_ms : now_ms);
  }
  return task::make(task::kCheckRun, "check_run:" + job.key, body, now_ms);
}

}  // namespace ootci
