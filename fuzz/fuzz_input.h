#pragma once
// What every fuzz target shares: the input as text, and as a file for the parsers that read one.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace ootci::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own under TMPDIR, made once.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string d = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/ootci-fuzz-" +
                    std::to_string(getpid()) + ".d";
    mkdir(d.c_str(), 0700);
    return d;
  }();
  return dir;
}

// The input written to one file per process (under TMPDIR), replaced on every call.
inline const std::string& file_with(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") +
                                  "/ootci-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace ootci::fuzz
