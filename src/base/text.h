#pragma once
// Small text helpers, one of each: trimming, splitting, lines, case, indentation, URL encoding.
#include <string>
#include <string_view>
#include <vector>

namespace ootci {

// ' ', tab, newline, carriage return, form feed or vertical tab: the ASCII whitespace that trim()
// drops (std::isspace without a locale).
bool is_ascii_space(char c);

// `s` without leading and trailing ASCII whitespace.
std::string trim(std::string_view s);

// `s` without trailing ASCII whitespace; leading indentation stays.
std::string trim_end(std::string_view s);

// The non-empty parts of `s` between `sep`s, as written (not trimmed): "a,,b," -> {"a", "b"}.
std::vector<std::string> split(std::string_view s, char sep);

// The lines of `s` without their "\n" or "\r\n"; a final newline adds no empty line.
std::vector<std::string> lines(std::string_view s);

// ASCII lower case.
std::string lower(std::string s);

// Whether `part` occurs anywhere in `text`.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The number of leading spaces and tabs (a tab counts one); a blank line's whole length.
size_t indent_of(std::string_view line);

// Every run of ASCII whitespace (newlines too) as one space, none at either end: a message that
// spans lines (libpq's, a response body, a reason) where one line is wanted.
std::string one_line(std::string_view s);

// Only spaces, tabs and carriage returns (or nothing).
bool is_blank(std::string_view line);

// Whether the first character after the leading spaces and tabs is `c` ('#': a comment line).
bool starts_after_indent(std::string_view line, char c);

// Percent-encoding for a URL query value or path segment: RFC 3986's unreserved characters stay.
std::string url_encode(std::string_view s);

// The first line of a message that has text (blank lines before it skipped), trimmed, at most
// `max_chars` characters (UTF-8 code points, never a character cut in half) with "..." after a
// cut; 0: no limit. The one way messages are shortened for a report, a reason or a log line.
std::string first_line(std::string_view message, size_t max_chars = 0);

// The end of `text` (trailing whitespace dropped), at most `max_chars` characters, with "..." in
// front when cut: where tools say what went wrong.
std::string tail(std::string_view text, size_t max_chars);

// A commit id's first 12 characters, as reports print it.
std::string short_sha(std::string_view sha);

// `s` as one POSIX shell word: in single quotes, a quote inside written '\''.
std::string shell_quote(std::string_view s);
// "1 file", "3 files": English plurals by adding "s".
std::string plural(size_t n, std::string_view word);

}  // namespace ootci
