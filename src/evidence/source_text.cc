#include "evidence/source_text.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "base/text.h"

namespace ootci {
namespace {

// Blanks [from, to) of `masked`, keeping newlines so line numbers stay.
void blank(std::string& masked, size_t from, size_t to) {
  for (size_t i = from; i < to && i < masked.size(); ++i)
    if (masked[i] != '\n') masked[i] = ' ';
}

// The end (one past the closing quote) of a quoted literal opened at `open`, honouring
// backslash escapes; stops at a newline for single-line literals.
size_t quoted_end(const std::string& t, size_t open, char quote, bool multiline) {
  size_t i = open + 1;
  while (i < t.size()) {
    if (t[i] == '\\') {
      i += 2;
      continue;
    }
    if (t[i] == quote) return i + 1;
    if (t[i] == '\n' && !multiline) return i;
    ++i;
  }
  return t.size();
}

// A C++ `'` that separates digits (1'000'000) rather than opening a character literal.
bool is_digit_separator(const std::string& t, size_t quote) {
  size_t start = quote;
  while (start > 0 && (is_identifier_char(t[start - 1]) || t[start - 1] == '\'')) --start;
  return start < quote && std::isdigit(static_cast<unsigned char>(t[start]));
}

std::string mask_cpp(const std::string& t) {
  std::string m = t;
  size_t i = 0;
  bool line_start = true;  // only whitespace since the last newline
  while (i < t.size()) {
    char c = t[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      // A preprocessor directive, with its continuation lines: a `#define X {` must not count.
      size_t end = i;
      while (end < t.size() && t[end] != '\n') {
        if (t[end] == '\\' && end + 1 < t.size() && t[end + 1] == '\n') ++end;
        ++end;
      }
      blank(m, i, end);
      i = end;
      continue;
    }
    if (!is_ascii_space(c)) line_start = false;
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      size_t end = t.find('\n', i);
      if (end == std::string::npos) end = t.size();
      blank(m, i, end);
      i = end;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      size_t end = t.find("*/", i + 2);
      end = end == std::string::npos ? t.size() : end + 2;
      blank(m, i, end);
      i = end;
    } else if (c == '"' && i > 0 && t[i - 1] == 'R' &&
               (i < 2 || !is_identifier_char(t[i - 2]) || t[i - 2] == '8' || t[i - 2] == 'u' ||
                t[i - 2] == 'U' || t[i - 2] == 'L')) {
      size_t paren = t.find('(', i);
      if (paren == std::string::npos) break;
      // Built by append: GCC 12 at -O3 reports a false -Wrestrict for ")" + substr.
      std::string close = ")";
      close.append(t, i + 1, paren - i - 1).push_back('"');
      size_t end = t.find(close, paren);
      end = end == std::string::npos ? t.size() : end;
      blank(m, paren + 1, end);
      i = std::min(t.size(), end + close.size());
    } else if (c == '"' || (c == '\'' && !is_digit_separator(t, i))) {
      size_t end = quoted_end(t, i, c, false);
      blank(m, i + 1, end > i + 1 ? end - 1 : end);
      i = end;
    } else {
      ++i;
    }
  }
  return m;
}

std::string mask_python(const std::string& t) {
  std::string m = t;
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '#') {
      size_t end = t.find('\n', i);
      if (end == std::string::npos) end = t.size();
      blank(m, i, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      bool triple = i + 2 < t.size() && t[i + 1] == c && t[i + 2] == c;
      if (triple) {
        std::string close(3, c);
        size_t j = i + 3;
        while (j < t.size() && t.compare(j, 3, close) != 0) j += t[j] == '\\' ? 2 : 1;
        size_t end = std::min(t.size(), j + 3);
        blank(m, i + 3, j);
        i = end;
      } else {
        size_t end = quoted_end(t, i, c, false);
        blank(m, i + 1, end > i + 1 ? end - 1 : end);
        i = end;
      }
    } else {
      ++i;
    }
  }
  return m;
}

const std::array<const char*, 12> kNotFunctions = {
    "if",     "for",      "while",   "switch",        "catch",   "return",
    "sizeof", "decltype", "alignof", "static_assert", "defined", "new"};

bool is_keyword_call(const std::string& name) {
  return std::any_of(kNotFunctions.begin(), kNotFunctions.end(),
                     [&](const char* k) { return name == k; });
}

size_t skip_spaces(const std::string& m, size_t i) {
  while (i < m.size() && is_ascii_space(m[i])) ++i;
  return i;
}

std::string word_at(const std::string& m, size_t i) {
  size_t end = i;
  while (end < m.size() && is_identifier_char(m[end])) ++end;
  return m.substr(i, end - i);
}

// After a parameter list's `)`: the `{` of a definition body, or npos. Allows cv/ref
// qualifiers, noexcept(...), override/final, attributes and a trailing return type.
size_t definition_body(const SourceText& s, size_t close_paren) {
  const std::string& m = s.masked();
  size_t i = close_paren + 1;
  bool trailing_return = false;
  while (true) {
    i = skip_spaces(m, i);
    if (i >= m.size()) return std::string::npos;
    char c = m[i];
    if (c == '{') return i;
    if (c == '-' && i + 1 < m.size() && m[i + 1] == '>') {
      trailing_return = true;
      i += 2;
      continue;
    }
    if (is_identifier_char(c)) {
      std::string w = word_at(m, i);
      static const std::array<const char*, 7> qualifiers = {
          "const", "noexcept", "override", "final", "volatile", "mutable", "__attribute__"};
      bool qualifier =
          std::any_of(qualifiers.begin(), qualifiers.end(), [&](const char* q) { return w == q; });
      if (!qualifier && !trailing_return) return std::string::npos;
      i += w.size();
      size_t next = skip_spaces(m, i);
      if (qualifier && next < m.size() && m[next] == '(') {
        size_t close = s.matching(next);
        if (close == std::string::npos) return std::string::npos;
        i = close + 1;
      }
      continue;
    }
    if (c == '&' ||
        (trailing_return && (c == ':' || c == '*' || c == '<' || c == '>' || c == ','))) {
      ++i;
      continue;
    }
    return std::string::npos;
  }
}

// The start of the declaration whose name begins at `name_begin`: just after the previous
// `;`, `{` or `}` (comments and directives are blank in the masked text).
size_t declaration_start(const std::string& m, size_t name_begin) {
  size_t i = name_begin;
  while (i > 0 && m[i - 1] != ';' && m[i - 1] != '{' && m[i - 1] != '}') --i;
  return skip_spaces(m, i);
}

struct CppDefinition {
  std::string name;  // unqualified
  size_t begin = 0, body_open = 0, body_close = 0;
};

std::vector<CppDefinition> cpp_definitions(const SourceText& s) {
  const std::string& m = s.masked();
  std::vector<CppDefinition> out;
  size_t i = 0;
  while (i < m.size()) {
    if (!is_identifier_char(m[i]) || (i > 0 && is_identifier_char(m[i - 1]))) {
      ++i;
      continue;
    }
    std::string w = word_at(m, i);
    size_t word_begin = i;
    i += w.size();
    if (std::isdigit(static_cast<unsigned char>(w[0])) || is_keyword_call(w)) continue;
    size_t open = skip_spaces(m, i);
    if (open >= m.size() || m[open] != '(') continue;
    // A member call (a.f(...), p->f(...)) is never a definition.
    size_t before = word_begin;
    while (before > 0 && is_ascii_space(m[before - 1])) --before;
    if (before > 0 &&
        (m[before - 1] == '.' || (m[before - 1] == '>' && before > 1 && m[before - 2] == '-')))
      continue;
    size_t close = s.matching(open);
    if (close == std::string::npos) continue;
    std::string name = w;
    size_t params_close = close;
    // Structured kernels: TORCH_IMPL_FUNC(add_out) (const Tensor& self, ...) { ... }
    if (w == "TORCH_IMPL_FUNC" || w == "TORCH_META_FUNC" || w == "TORCH_META_FUNC2" ||
        w == "TORCH_PRECOMPUTE_META_FUNC") {
      auto args = s.split_arguments(open + 1, close);
      if (args.empty()) continue;
      name = m.substr(args[0].first, args[0].second - args[0].first);
      size_t params = skip_spaces(m, close + 1);
      if (params >= m.size() || m[params] != '(') continue;
      params_close = s.matching(params);
      if (params_close == std::string::npos) continue;
    }
    size_t body = definition_body(s, params_close);
    if (body == std::string::npos) continue;
    size_t body_close = s.matching(body);
    if (body_close == std::string::npos) continue;
    out.push_back({name, declaration_start(m, word_begin), body, body_close});
  }
  return out;
}

std::string last_component(const std::string& name) {
  size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

int python_indentation(const std::string& line) {
  int n = 0;
  for (char c : line) {
    if (c == ' ')
      ++n;
    else if (c == '\t')
      n += 8 - n % 8;
    else
      break;
  }
  return n;
}

}  // namespace

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim_copy(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_ascii_space(s[b])) ++b;
  while (e > b && is_ascii_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

SourceText::SourceText(std::string text, SourceLanguage language)
    : text_(std::move(text)), language_(language) {
  masked_ = language == SourceLanguage::kCpp ? mask_cpp(text_) : mask_python(text_);
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n' && i + 1 < text_.size()) line_starts_.push_back(i + 1);
}

int SourceText::line_of(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<int>(it - line_starts_.begin());
}

size_t SourceText::line_start(int line) const {
  if (line < 1) return 0;
  if (line > line_count()) return masked_.size();
  return line_starts_[line - 1];
}

std::string SourceText::masked_line(int line) const {
  if (line < 1 || line > line_count()) return "";
  size_t begin = line_starts_[static_cast<size_t>(line - 1)];
  size_t end = static_cast<size_t>(line) < line_starts_.size()
                   ? line_starts_[static_cast<size_t>(line)]
                   : text_.size();
  std::string out = masked_.substr(begin, end - begin);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool SourceText::is_code_line(int line) const {
  if (!trim_copy(masked_line(line)).empty()) return true;
  if (language_ != SourceLanguage::kCpp || line < 1 || line > line_count()) return false;
  // A directive is blank in the masked text but is code (an #include changes what compiles).
  size_t begin = line_starts_[static_cast<size_t>(line - 1)];
  size_t first = text_.find_first_not_of(" \t", begin);
  return first != std::string::npos && text_[first] == '#';
}

size_t SourceText::matching(size_t open) const {
  if (open >= masked_.size()) return std::string::npos;
  char o = masked_[open];
  char c = o == '(' ? ')' : o == '[' ? ']' : o == '{' ? '}' : 0;
  if (!c) return std::string::npos;
  int depth = 0;
  for (size_t i = open; i < masked_.size(); ++i) {
    if (masked_[i] == o) ++depth;
    if (masked_[i] == c && --depth == 0) return i;
  }
  return std::string::npos;
}

std::optional<std::pair<std::string, size_t>> SourceText::string_at(size_t from, size_t end) const {
  end = std::min(end, masked_.size());
  for (size_t i = from; i < end; ++i) {
    char q = masked_[i];
    if (q != '"' && q != '\'') continue;
    bool triple =
        i + 2 < masked_.size() && masked_[i + 1] == q && masked_[i + 2] == q && text_[i + 1] == q;
    size_t open_len = triple ? 3 : 1;
    size_t close = masked_.find(triple ? std::string(3, q) : std::string(1, q), i + open_len);
    if (close == std::string::npos) return std::nullopt;
    return std::make_pair(text_.substr(i + open_len, close - i - open_len), i);
  }
  return std::nullopt;
}

std::vector<std::pair<size_t, size_t>> SourceText::split_arguments(size_t begin, size_t end) const {
  std::vector<std::pair<size_t, size_t>> out;
  auto push = [&](size_t b, size_t e) {
    while (b < e && is_ascii_space(masked_[b])) ++b;
    while (e > b && is_ascii_space(masked_[e - 1])) --e;
    if (b < e) out.emplace_back(b, e);
  };
  int depth = 0;
  size_t start = begin;
  for (size_t i = begin; i < end && i < masked_.size(); ++i) {
    char c = masked_[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      push(start, i);
      start = i + 1;
    }
  }
  push(start, end);
  return out;
}

std::vector<size_t> SourceText::find_word(const std::string& word) const {
  std::vector<size_t> out;
  for (size_t i = masked_.find(word); i != std::string::npos; i = masked_.find(word, i + 1)) {
    bool left = i == 0 || !is_identifier_char(masked_[i - 1]);
    bool right = i + word.size() >= masked_.size() || !is_identifier_char(masked_[i + word.size()]);
    if (left && right) out.push_back(i);
  }
  return out;
}

std::vector<FunctionDefinition> cpp_function_definitions(const SourceText& source) {
  std::vector<FunctionDefinition> out;
  for (const auto& d : cpp_definitions(source))
    out.push_back({d.name, source.line_of(d.begin), source.line_of(d.body_close)});
  return out;
}

std::optional<std::pair<int, int>> cpp_function_lines(const SourceText& source,
                                                      const std::string& name) {
  std::string wanted = last_component(name);
  for (const auto& d : cpp_function_definitions(source))
    if (d.name == wanted) return std::make_pair(d.first_line, d.last_line);
  return std::nullopt;
}

std::vector<std::string> cpp_functions_at(const SourceText& source, int line) {
  std::vector<std::string> out;
  for (const auto& d : cpp_function_definitions(source))
    if (d.first_line <= line && line <= d.last_line) out.push_back(d.name);
  return out;
}

std::optional<std::pair<int, int>> python_function_lines(const SourceText& source,
                                                         const std::string& name) {
  const std::string& m = source.masked();
  for (size_t at : source.find_word(name)) {
    // `def name(` at the start of a line (after indentation and an optional `async`).
    size_t line_begin = m.rfind('\n', at);
    line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
    std::string head = trim_copy(m.substr(line_begin, at - line_begin));
    if (head != "def" && head != "async def") continue;
    size_t open = skip_spaces(m, at + name.size());
    if (open >= m.size() || m[open] != '(') continue;
    size_t close = source.matching(open);
    if (close == std::string::npos) continue;
    int def_indent = python_indentation(m.substr(line_begin, at - line_begin));
    int first = source.line_of(line_begin);
    // Decorators directly above belong to the function.
    auto line_text = [&](int line) { return source.masked_line(line); };
    while (first > 1 && trim_copy(line_text(first - 1)).rfind('@', 0) == 0) --first;
    int last = source.line_of(close);
    for (int line = last + 1; line <= source.line_count(); ++line) {
      std::string text = line_text(line);
      if (trim_copy(text).empty()) continue;
      if (python_indentation(text) <= def_indent) break;
      last = line;
    }
    return std::make_pair(first, last);
  }
  return std::nullopt;
}

}  // namespace ootci
