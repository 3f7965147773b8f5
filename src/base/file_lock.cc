#include "base/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "base/error.h"

namespace ootci {

std::optional<FileLock> FileLock::try_lock(const std::string& path, pid_t* holder) {
  // O_CLOEXEC: a test process ootci starts must not keep the lock after ootci is gone.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("{}: cannot open the lock file: {}", path, strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (holder) {
      char text[32] = {};
      ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
      *holder = n > 0 ? static_cast<pid_t>(std::strtol(text, nullptr, 10)) : 0;
    }
    ::close(fd);
    if (err == EWOULDBLOCK) return std::nullopt;
    throw Error(fmt::format("{}: cannot lock: {}", path, strerror(err)));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  bool written = ::ftruncate(fd, 0) == 0 &&
                 ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  (void)written;  // the pid only names the holder in messages; the lock is what counts
  return FileLock(fd);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ootci
