#pragma once
#include <string>

namespace ootci {

// Writes `text` to `path` through a temporary file in the same folder and a rename, so a reader
// sees the old file or the new one, never half of one. Creates the folder if needed; throws Error
// naming the file on failure.
void write_file_atomically(const std::string& path, const std::string& text);

// Appends `text` to `path` (created if missing): for files other steps write too, such as
// $GITHUB_OUTPUT. Throws Error naming the file on failure.
void append_to_file(const std::string& path, const std::string& text);

}  // namespace ootci
