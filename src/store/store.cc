#include "store/store.h"

#include "base/error.h"

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

std::unique_ptr<Store> open_store(const std::string& uri) {
  if (uri.rfind("sqlite:", 0) == 0) return open_sqlite_store(uri.substr(7));
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0)
    return open_postgres_store(uri);
  throw Error("store: expected sqlite:PATH or a postgresql:// URI, got '" + uri + "'");
}

}  // namespace ootci
