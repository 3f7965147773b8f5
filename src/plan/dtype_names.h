#pragma once
#include <optional>
#include <string>

namespace ootci {

// The canonical torch dtype name for a config's dtype name ("half" → "float16"), or nullopt when
// the name is not a dtype the configs may use.
std::optional<std::string> canonical_dtype(const std::string& name);

// "float16, float32, ..., bool": every accepted name, for error messages.
std::string accepted_dtype_names();

// "ComplexFloat" -> "complex64" (c10 ScalarType names in error messages), or "".
std::string dtype_of_scalar_type(const std::string& scalar_type);

}  // namespace ootci
