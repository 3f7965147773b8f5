#pragma once
// What tests read from a relay store that the Store interface does not show: the rows of its
// tables, straight from the database behind the store's URI.
#include <string>
#include <vector>

#include "relay_store/store.h"

namespace ootci {

// The tasks of one kind, in id order.
std::vector<TaskItem> tasks_of_kind(const std::string& store_uri, const std::string& kind);

}  // namespace ootci
