#include "base/file_text.h"

#include <filesystem>
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

std::string read_file_tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<size_t>(in.tellg());
  size_t from = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(size - from, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

uintmax_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  uintmax_t n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace ootci
