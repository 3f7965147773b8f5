#pragma once
// A light view of C++ and Python source text for the code-evidence scanner: comments and string
// contents blanked out (same length, newlines kept), so braces, parentheses and names can be
// matched on the masked text while string literals are read from the original at the same
// offsets.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ootci {

enum class SourceLanguage { kCpp, kPython };

class SourceText {
 public:
  SourceText(std::string text, SourceLanguage language);

  const std::string& text() const { return text_; }
  // Comments become spaces; a string or character literal keeps its quotes (and a raw string its
  // R"delim( and )delim") with its contents blanked.
  const std::string& masked() const { return masked_; }
  int line_of(size_t offset) const;   // 1-based
  size_t line_start(int line) const;  // offset of a 1-based line's first character
  int line_count() const { return static_cast<int>(line_starts_.size()); }
  // Whether a 1-based line holds anything besides whitespace and comments (a C++ directive
  // counts as code), so comment-only edits can be told apart.
  bool is_code_line(int line) const;
  std::string masked_line(int line) const;  // without its newline

  // The offset of the bracket closing the one at `open` ('(', '[', '{' or '<' for templates
  // counts only its own kind), or npos when unbalanced.
  size_t matching(size_t open) const;
  // The string literal starting at or after `from` and before `end`: its unquoted text (escapes
  // kept as written) and where it starts; nullopt when there is none.
  std::optional<std::pair<std::string, size_t>> string_at(size_t from, size_t end) const;
  // Splits masked()[begin, end) at top-level commas: [begin, end) of each argument, trimmed.
  std::vector<std::pair<size_t, size_t>> split_arguments(size_t begin, size_t end) const;
  // Offsets where `word` occurs as a whole identifier in the masked text.
  std::vector<size_t> find_word(const std::string& word) const;

 private:
  std::string text_;
  SourceLanguage language_;
  std::string masked_;
  std::vector<size_t> line_starts_;
};

bool is_identifier_char(char c);
std::string trim_copy(const std::string& s);

struct FunctionDefinition {
  std::string name;  // unqualified ("fn" for ns::fn; "add_out" for TORCH_IMPL_FUNC(add_out))
  int first_line = 0, last_line = 0;  // from its declaration's start to its closing brace
};
// C++: every function definition (with a body) in the file, in order.
std::vector<FunctionDefinition> cpp_function_definitions(const SourceText& source);

// C++: the definition of a function named `name` (the last component of a qualified name;
// "ns::fn" matches "fn" and "ns::fn" definitions) as 1-based [first line, last line], from the
// start of its declaration (return type, template header) to its closing brace. The first
// definition wins; nullopt when the file only declares or calls it.
std::optional<std::pair<int, int>> cpp_function_lines(const SourceText& source,
                                                      const std::string& name);
// C++: the unqualified names of every function definition spanning `line`.
std::vector<std::string> cpp_functions_at(const SourceText& source, int line);

// Python: `def name(` (any indentation) to the last line of its body (by indentation).
std::optional<std::pair<int, int>> python_function_lines(const SourceText& source,
                                                         const std::string& name);

}  // namespace ootci
