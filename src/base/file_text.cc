#include "base/file_text.h"

#include <fstream>
#include <sstream>

namespace ootci {

std::optional<std::string> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_file_or_empty(const std::string& path) {
  return read_file_bytes(path).value_or("");
}

}  // namespace ootci
