#include "base/text.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace ootci {
namespace {

constexpr std::string_view kSpace = " \t\r\n\f\v";

}  // namespace

bool is_ascii_space(char c) {
  return kSpace.find(c) != std::string_view::npos;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

std::string trim_end(std::string_view s) {
  size_t e = s.find_last_not_of(kSpace);
  return e == std::string_view::npos ? "" : std::string(s.substr(0, e + 1));
}

std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (!is_ascii_space(c))
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t end = std::min(s.find(sep, i), s.size());
    if (end > i) out.emplace_back(s.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

std::vector<std::string> lines(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = std::min(s.find('\n', i), s.size());
    std::string_view line = s.substr(i, end - i);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    i = end + 1;
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

size_t indent_of(std::string_view line) {
  size_t n = line.find_first_not_of(" \t");
  return n == std::string_view::npos ? line.size() : n;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

bool starts_after_indent(std::string_view line, char c) {
  size_t n = line.find_first_not_of(" \t");
  return n != std::string_view::npos && line[n] == c;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved)
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string first_line(std::string_view message, size_t max_chars) {
  size_t start = message.find_first_not_of(kSpace);
  if (start == std::string_view::npos) return "";
  std::string_view rest = message.substr(start);
  std::string line = trim_end(rest.substr(0, rest.find('\n')));
  if (max_chars == 0) return line;
  bool cut = false;
  std::string kept = truncate_utf8_chars(line, max_chars, &cut);
  return cut ? kept + "..." : kept;
}

std::string tail(std::string_view text, size_t max_chars) {
  std::string t = trim_end(text);
  return t.size() <= max_chars ? t : "..." + t.substr(t.size() - max_chars);
}

std::string short_sha(std::string_view sha) {
  return std::string(sha.substr(0, 12));
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

}  // namespace ootci
