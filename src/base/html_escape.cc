#include "base/html_escape.h"

namespace ootci {

std::string esc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string safe_href(std::string_view url) {
  if (url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0) return esc(url);
  return "#";
}

}  // namespace ootci
