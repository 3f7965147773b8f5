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

}  // namespace ootci
