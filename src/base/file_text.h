#pragma once
// Reading a whole file: the one helper for it (writing is atomic_file.h).
#include <cstdint>
#include <optional>
#include <string>

namespace ootci {

// The file's bytes; nullopt when it cannot be opened.
std::optional<std::string> read_file_bytes(const std::string& path);

// The file's bytes, or "" when it cannot be opened: for files whose absence means "nothing".
std::string read_file_or_empty(const std::string& path);

// The file's last `max_bytes` bytes (all of it when shorter), or "" when it cannot be opened: the
// end of a log, where a process says why it stopped.
std::string read_file_tail(const std::string& path, size_t max_bytes);

// The file's size, or 0 when it does not exist (yet): a watchdog's sign that a log grows.
uintmax_t file_size_or_zero(const std::string& path);

}  // namespace ootci
