#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace ootci {

// An advisory lock on a file (flock), held while the object lives. The kernel releases it when
// the process ends, however it ends, so a held lock means a live holder: what tells a run another
// process is still running from one whose process was killed.
class FileLock {
 public:
  // Locks `path` (created if missing) and writes this process's pid into it. Nullopt when another
  // holder has it; `*holder` then gets the pid written there (0 if none yet). Throws Error naming
  // the file when it cannot be opened.
  static std::optional<FileLock> try_lock(const std::string& path, pid_t* holder = nullptr);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ootci
