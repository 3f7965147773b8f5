#include "relay/hud_forward.h"

#include <cmath>

#include "relay/task_runner.h"

namespace ootci {
namespace {

nlohmann::json seconds(int64_t ms, bool include) {
  if (!include || ms < 0) return nullptr;
  return std::round(static_cast<double>(ms)) / 1000.0;  // 3 decimals, as CRCR rounds
}

}  // namespace

nlohmann::json hud_envelope(const JobRecord& job, const nlohmann::json& body) {
  bool done = job.status == JobStatus::kCompleted;
  return {{"trusted",
           {{"verified_repo", job.repo},
            {"downstream_repo_level", job.level},
            {"ci_metrics",
             {{"queue_time", seconds(job.queue_time_ms, !done)},
              {"execution_time", seconds(job.execution_time_ms, done)}}}}},
          {"untrusted", {{"callback_payload", body}}}};
}

TaskItem hud_forward_task(const JobRecord& job, const nlohmann::json& body, int64_t now_ms) {
  return task::make(task::kHudForward, "hud:" + job.key, hud_envelope(job, body), now_ms);
}

}  // namespace ootci
