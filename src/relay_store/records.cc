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

constexpr EnumName<JobConclusion::Kind> kJobConclusionNames[] = {
    {JobConclusion::kNone, ""},
    {JobConclusion::kSuccess, "success"},
    {JobConclusion::kFailure, "failure"},
    {JobConclusion::kTimedOut, "timed_out"},
    {JobConclusion::kCancelled, "cancelled"},
};

}  // namespace

JobConclusion::JobConclusion(Kind kind)
    : kind_(kind), text_(enum_text(kJobConclusionNames, kind)) {}

JobConclusion JobConclusion::parse(std::string text) {
  JobConclusion c;
  c.kind_ = enum_parse(kJobConclusionNames, text).value_or(kOther);
  c.text_ = std::move(text);
  return c;
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
  return job.conclusion == JobConclusion::kFailure && job.verdict_category == "upstream" &&
         job.verdict_confidence == "high";
}

}  // namespace ootci
