#include "relay_store/records.h"

#include "base/enum_names.h"

namespace ootci {
namespace {

constexpr EnumName<OutboxStatus> kOutboxStatusNames[] = {
    {OutboxStatus::kPending, "pending"},
    {OutboxStatus::kDelivered, "delivered"},
    {OutboxStatus::kFailed, "failed"},
};

constexpr EnumName<TaskStatus> kTaskStatusNames[] = {
    {TaskStatus::kPending, "pending"},
    {TaskStatus::kDone, "done"},
    {TaskStatus::kFailed, "failed"},
};

constexpr EnumName<JobStatus> kJobStatusNames[] = {
    {JobStatus::kInProgress, "in_progress"},
    {JobStatus::kCompleted, "completed"},
};

}  // namespace

const char* to_string(JobStatus s) {
  return enum_text(kJobStatusNames, s).data();  // the table's literals end in NUL
}

std::optional<JobStatus> parse_job_status(std::string_view text) {
  return enum_parse(kJobStatusNames, text);
}

JobStatus parse_stored_job_status(std::string_view text) {
  return parse_job_status(text).value_or(JobStatus::kInProgress);
}

const char* to_string(TaskStatus s) {
  return enum_text(kTaskStatusNames, s).data();  // the table's literals end in NUL
}

TaskStatus parse_task_status(std::string_view text) {
  return enum_parse(kTaskStatusNames, text).value_or(TaskStatus::kFailed);
}

const char* to_string(OutboxStatus s) {
  return enum_text(kOutboxStatusNames, s).data();  // the table's literals end in NUL
}

OutboxStatus parse_outbox_status(std::string_view text) {
  return enum_parse(kOutboxStatusNames, text).value_or(OutboxStatus::kPending);
}

bool upstream_caused(const JobRecord& job) {
  return job.conclusion == "failure" && job.verdict_category == "upstream" &&
         job.verdict_confidence == "high";
}

}  // namespace ootci
