#include "base/sha256.h"

#include <openssl/evp.h>

#include "base/error.h"
#include "base/file_text.h"

namespace ootci {

const EVP_MD* sha256_md() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = digits[b >> 4];
    out[2 * i + 1] = digits[b & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, sha256_md(), nullptr);
  return to_hex(std::string_view(reinterpret_cast<char*>(out), len));
}

std::string file_sha256_hex(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) throw Error(path + ": cannot read file");
  return sha256_hex(*bytes);
}

}  // namespace ootci
