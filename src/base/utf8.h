#pragma once
#include <cstddef>
#include <string>

namespace ootci {

// Cuts at a UTF-8 character boundary at or below max_bytes, so no character is cut in half.
std::string truncate_utf8(const std::string& s, size_t max_bytes);

// The first max_chars characters (code points, as Python's len counts them), and whether any
// were cut.
std::string truncate_utf8_chars(const std::string& s, size_t max_chars, bool* cut = nullptr);

}  // namespace ootci
