#pragma once
#include <cstddef>
#include <string>

namespace ootci {

// Cuts at a UTF-8 character boundary at or below max_bytes, so no character is cut in half.
std::string truncate_utf8(const std::string& s, size_t max_bytes);

}  // namespace ootci
