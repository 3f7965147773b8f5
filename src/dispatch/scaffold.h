#pragma once
// `ootci init`: the files a backend repository needs to run ootci in GitHub Actions on CRCR
// dispatches (the workflow, ootci.yaml, a starter test-suite config, next steps).
#include <map>
#include <string>
#include <vector>

namespace ootci {

// Throws Error unless `device` is a non-empty [a-z0-9_-]+ (it names files, labels and a module).
void validate_device_name(const std::string& device);

// Relative path -> content, for `device`. Pure: the same device always gives the same files.
// Throws Error for an invalid device name.
std::map<std::string, std::string> scaffold_files(const std::string& device);

// The paths of `files` that already exist under `dir`.
std::vector<std::string> existing_scaffold_files(const std::string& dir,
                                                 const std::map<std::string, std::string>& files);

// Writes `files` under `dir` (folders created as needed) and returns the paths written, in
// order. Unless `force`, refuses to write anything when any of them exists: throws Error
// listing every one.
std::vector<std::string> write_scaffold(const std::string& dir,
                                        const std::map<std::string, std::string>& files,
                                        bool force);

}  // namespace ootci
