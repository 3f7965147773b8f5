#pragma once
// `ootci init`: the files a backend repository needs to run ootci in GitHub Actions on CRCR
// dispatches (the workflow, ootci.yaml, a starter test-suite config, next steps).
#include <map>
#include <string>
#include <vector>

namespace ootci {

// Throws Error unless `device` is a non-empty [a-z0-9_-]+ (it names files, labels and a module).
void validate_device_name(const std::string& device);

// How the generated setup action installs ootci on the runners, the first one set winning: a
// wheel (URL with its SHA-256, or a path in the repository), `pip install ootci==version` from a
// package index (empty: pip's default), a release's Debian package (URL and SHA-256, both or
// neither), else a build from source (repository and ref). Empty values leave the action's inputs
// empty for the user to fill in. The {} let an initializer name only some fields.
struct OotciSource {
  std::string deb_url{};
  std::string deb_sha256{};
  std::string repository{};
  std::string ref{};
  std::string wheel{};
  std::string wheel_sha256{};
  std::string version{};
  std::string index_url{};
};

// Throws Error naming the option when a value cannot go into the action: a URL must be http(s)
// of plain URL characters (no quotes, backslashes, braces or spaces: they would need escaping in
// YAML or open a ${{ }} expression), the SHA-256 64 hex digits, a ref a plain git ref name.
void validate_ootci_source(const OotciSource& source);

// Relative path -> content, for `device`. Pure: the same arguments always give the same files.
// Throws Error for an invalid device name or source.
std::map<std::string, std::string> scaffold_files(const std::string& device,
                                                  const OotciSource& source = {});

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
