#pragma once
// What `ootci --version` prints. Defined in a file generated at build time
// (cmake/version_cc.cmake).

namespace ootci {

extern const char* const kVersion;      // project(ootci VERSION ...) in CMakeLists.txt
extern const char* const kGitRevision;  // `git describe --always --dirty`, or "unknown"
extern const char* const kBuildType;    // CMAKE_BUILD_TYPE

}  // namespace ootci
