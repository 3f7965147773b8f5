#pragma once
#include <optional>
#include <string>

namespace ootci {

// The canonical torch dtype name for a config's dtype name ("half" → "float16"), or nullopt when
// the name is not a dtype the configs may use.
std::optional<std::string> canonical_dtype(const std::string& name);

// "float16, float32, ..., bool": every accepted name, for error messages.
std::string accepted_dtype_names();

}  // namespace ootci
