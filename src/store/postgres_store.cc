#include "base/error.h"
#include "store/store.h"

namespace ootci {

std::unique_ptr<Store> open_postgres_store(const std::string&) {
  throw Error("postgres store: not implemented yet");
}

}  // namespace ootci
