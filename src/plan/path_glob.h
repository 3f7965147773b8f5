#pragma once
#include <string>
#include <vector>

namespace ootci {

// True when `pattern` has any of the glob characters * ? [.
bool has_glob_chars(const std::string& pattern);

// Every existing path matching an absolute `pattern`, sorted. `*`, `?` and `[...]` match within
// one path component (not a leading dot), `**` as a whole component matches any number of
// folders, including none. A pattern without glob characters yields itself if it exists.
std::vector<std::string> expand_glob(const std::string& pattern);

}  // namespace ootci
