#pragma once
// Paths written in a config file: the one rule for resolving them.
#include <string>

namespace ootci {

// `p` as a config in folder `dir` means it: an absolute path as it is, a relative one joined to
// `dir`; normalised, without a trailing slash. "" (unset) and URLs ("sqlite://…") stay as they are.
std::string path_in_config_dir(const std::string& dir, const std::string& p);

}  // namespace ootci
