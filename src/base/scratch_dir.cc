#include "base/scratch_dir.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

#include "base/error.h"

namespace ootci {

ScratchDir::ScratchDir(const std::string& what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/ootci-{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", what);
  if (!mkdtemp(pattern.data())) throw Error(fmt::format("cannot create {}", pattern));
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace ootci
