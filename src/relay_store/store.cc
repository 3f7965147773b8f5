#include "relay_store/store.h"

namespace ootci {

const char* to_string(OutboxStatus s) {
  switch (s) {
    case OutboxStatus::kPending:
      return "pending";
    case OutboxStatus::kDelivered:
      return "delivered";
    case OutboxStatus::kFailed:
      return "failed";
  }
  return "pending";
}

bool upstream_caused(const JobRecord& job) {
  return job.conclusion == "failure" && job.verdict_category == "upstream" &&
         job.verdict_confidence == "high";
}

}  // namespace ootci
