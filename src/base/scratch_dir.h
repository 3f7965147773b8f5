#pragma once
#include <string>

namespace ootci {

// A temporary folder ($TMPDIR or /tmp, named ootci-<what>-XXXXXX) removed with everything in it
// when it goes out of scope. Throws Error when it cannot be created.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& what = "scratch");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ootci
