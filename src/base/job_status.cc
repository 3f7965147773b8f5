#include "base/job_status.h"

#include "base/enum_names.h"

namespace ootci {
namespace {

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

}  // namespace ootci
