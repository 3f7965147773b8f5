#include "base/atomic_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace fs = std::filesystem;

namespace ootci {

void write_file_atomically(const std::string& path, const std::string& text) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw Error(
        fmt::format("{}: cannot create folder: {}", target.parent_path().string(), ec.message()));
  // The pid keeps two processes writing the same file from sharing a temporary.
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      throw Error(fmt::format("{}: cannot write", tmp));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(fmt::format("{}: cannot rename into place: {}", path, ec.message()));
  }
}

void append_to_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
  out.flush();
  if (!out) throw Error(fmt::format("cannot write {}", path));
}

}  // namespace ootci
