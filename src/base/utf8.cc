#include "base/utf8.h"

namespace ootci {

std::string truncate_utf8(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  // Continuation bytes are 10xxxxxx: back up to the first byte of the character at `cut`.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

std::string truncate_utf8_chars(const std::string& s, size_t max_chars, bool* cut) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // inside a character
    if (chars++ == max_chars) {
      if (cut) *cut = true;
      return s.substr(0, i);
    }
  }
  if (cut) *cut = false;
  return s;
}

}  // namespace ootci
