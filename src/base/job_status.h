#pragma once
// A CRCR job's state as a callback's workflow.status says it: in_progress, then completed. The
// relay reads it and the backend's callback client writes it, so both take it from here.
#include <optional>
#include <string_view>

namespace ootci {

enum class JobStatus { kInProgress, kCompleted };
const char* to_string(JobStatus s);
std::optional<JobStatus> parse_job_status(std::string_view text);

}  // namespace ootci
