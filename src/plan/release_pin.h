#pragma once
// The release line a version pin tracks: gate.pull_request.release_pin adds release/MAJOR.MINOR
// to the base branches that build.
#include <optional>
#include <string>

namespace ootci {

// "torch~=2.14.0" -> "2.14" (the first MAJOR.MINOR in the pin); nullopt when there is none.
std::optional<std::string> pinned_minor(const std::string& pin);

}  // namespace ootci
