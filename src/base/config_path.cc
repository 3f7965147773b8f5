#include "base/config_path.h"

#include <filesystem>

namespace ootci {

std::string path_in_config_dir(const std::string& dir, const std::string& p) {
  if (p.empty() || p.find("://") != std::string::npos) return p;
  std::string joined = (std::filesystem::path(dir) / p).lexically_normal().string();
  while (joined.size() > 1 && joined.back() == '/') joined.pop_back();
  return joined;
}

}  // namespace ootci
