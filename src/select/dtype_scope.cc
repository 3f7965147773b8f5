#include "select/dtype_scope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <vector>

#include "base/text.h"
#include "plan/dtype_names.h"

namespace ootci {
namespace dtype_scan {

const std::set<std::string> kFloating = {"float32", "float64"};
const std::set<std::string> kReducedFloating = {"float16", "bfloat16"};
const std::set<std::string> kIntegral = {"uint8", "int8", "int16", "int32", "int64"};
const std::set<std::string> kComplex = {"complex64", "complex128"};

std::set<std::string> unite(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// The dtype constants named in `text` ("at::kFloat" in "x.scalar_type() == at::kFloat").
std::set<std::string> constants_in(const std::string& text) {
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!is_identifier_char(text[i]) || (i > 0 && is_identifier_char(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (is_identifier_char(text[j]) ||
                               (text[j] == ':' && j + 1 < text.size() && text[j + 1] == ':')))
      j += text[j] == ':' ? 2 : 1;
    if (auto d = dtype_of_constant(text.substr(i, j - i))) out.insert(*d);
    i = j;
  }
  return out;
}

// One function body in masked text, with the small C++ grammar the scopes need: statements,
// if/else extents and the block around an offset.
struct Body {
  const SourceText& source;
  const std::string& m;
  size_t open = std::string::npos, close = std::string::npos;  // its braces

  Body(const SourceText& s, int first, int last) : source(s), m(s.masked()) {
    // The body is the first '{' from the definition's start whose match is on its last line.
    for (size_t i = s.line_start(first); i < m.size() && s.line_of(i) <= last; ++i) {
      if (m[i] != '{') continue;
      size_t end = s.matching(i);
      if (end != std::string::npos && s.line_of(end) == last) {
        open = i;
        close = end;
        return;
      }
    }
  }
  bool ok() const { return open != std::string::npos; }

  size_t skip(size_t i) const {
    while (i < m.size() && is_ascii_space(m[i])) ++i;
    return i;
  }
  bool word_at(size_t i, const std::string& w) const {
    return m.compare(i, w.size(), w) == 0 &&
           (i + w.size() >= m.size() || !is_identifier_char(m[i + w.size()])) &&
           (i == 0 || !is_identifier_char(m[i - 1]));
  }
  std::string text(size_t from, size_t to) const { return m.substr(from, to - from); }

  // The last offset of the statement starting at `i` (its ';' or closing brace).
  size_t statement_end(size_t i) const {
    i = skip(i);
    if (i >= close) return close;
    if (m[i] == '{') return source.matching(i);
    if (word_at(i, "if")) return if_statement(i).end;
    for (const char* loop : {"for", "while", "switch"}) {
      if (!word_at(i, loop)) continue;
      size_t paren = skip(i + std::string(loop).size());
      if (paren < m.size() && m[paren] == '(') {
        size_t p = source.matching(paren);
        if (p != std::string::npos) return statement_end(p + 1);
      }
    }
    int depth = 0;
    for (size_t j = i; j < close; ++j) {
      char c = m[j];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) return j - 1;  // the enclosing block ends first
        --depth;
      }
      if (c == ';' && depth == 0) return j;
    }
    return close;
  }

  struct If {
    size_t begin = 0, cond_open = 0, cond_close = 0;
    size_t then_begin = 0, then_end = 0;
    size_t else_begin = std::string::npos, else_end = std::string::npos;  // the branch's body
    size_t end = 0;
    bool ok = false;
  };
  If if_statement(size_t at) const {
    If s;
    s.begin = at;
    size_t paren = skip(at + 2);
    if (word_at(paren, "constexpr")) paren = skip(paren + 9);
    if (paren >= m.size() || m[paren] != '(') return s;
    size_t cond_close = source.matching(paren);
    if (cond_close == std::string::npos || cond_close >= close) return s;
    s.cond_open = paren;
    s.cond_close = cond_close;
    s.then_begin = skip(cond_close + 1);
    s.then_end = statement_end(s.then_begin);
    s.end = s.then_end;
    size_t after = skip(s.then_end + 1);
    if (after < close && word_at(after, "else")) {
      s.else_begin = skip(after + 4);
      s.else_end = statement_end(s.else_begin);
      s.end = s.else_end;
    }
    s.ok = s.then_end != std::string::npos && s.then_end <= close;
    return s;
  }

  // The '{' of the innermost block holding offset `at`.
  size_t block_of(size_t at) const {
    int depth = 0;
    for (size_t i = at; i-- > open;) {
      if (m[i] == '}') ++depth;
      if (m[i] == '{' && depth-- == 0) return i;
    }
    return open;
  }

  // Offsets of the identifiers starting with `prefix` in the body.
  std::vector<size_t> words_starting(const std::string& prefix) const {
    std::vector<size_t> out;
    for (size_t i = m.find(prefix, open); i != std::string::npos && i < close;
         i = m.find(prefix, i + 1))
      if (i == 0 || !is_identifier_char(m[i - 1])) out.push_back(i);
    return out;
  }
  // Whether `name` is given a value in the body that has a dtype of the kernel's choosing (a
  // conversion such as `.to(at::kFloat)`, or a dtype constant), so a test of its dtype says
  // nothing about the dtypes the op was called with.
  bool converted(const std::string& name) const {
    static const char* const kConversions[] = {
        ".to(",    "toType(",     ".type(", "_to_copy", ".float()",    ".double()",
        ".half()", ".bfloat16()", ".to<",   "::k",      "ScalarType::"};
    for (size_t i = m.find(name, open); i != std::string::npos && i < close;
         i = m.find(name, i + 1)) {
      if ((i > 0 && is_identifier_char(m[i - 1])) || is_identifier_char(m[i + name.size()]))
        continue;
      size_t eq = skip(i + name.size());
      if (eq + 1 >= m.size() || m[eq] != '=' || m[eq + 1] == '=') continue;
      size_t end = m.find(';', eq);
      std::string value = m.substr(eq, end == std::string::npos ? 0 : end - eq);
      for (const char* c : kConversions)
        if (value.find(c) != std::string::npos) return true;
      if (!constants_in(value).empty()) return true;
    }
    return false;
  }

  std::string identifier_at(size_t i) const {
    size_t j = i;
    while (j < m.size() && (is_identifier_char(m[j]) || (m[j] == ':' && m[j + 1] == ':'))) {
      j += m[j] == ':' ? 2 : 1;
    }
    return m.substr(i, j - i);
  }
};

// Splits `text` at top-level occurrences of `op` ("||", "&&", ",").
std::vector<std::string> split_top(const std::string& text, const std::string& op) {
  std::vector<std::string> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth == 0 && text.compare(i, op.size(), op) == 0) {
      out.push_back(text.substr(from, i - from));
      from = i + op.size();
      i = from - 1;
    }
  }
  out.push_back(text.substr(from));
  return out;
}

// A dtype test: the dtypes for which it holds (`positive`) or for which it fails.
struct DtypeTest {
  std::set<std::string> dtypes;
  bool positive = true;
};

// One comparison or predicate: `== kFloat`, `!= kFloat`, `isFloatingType(...)`.
// The identifiers of `text` that start an expression (`self` in `self.scalar_type()`).
std::vector<std::string> roots_in(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!is_identifier_char(text[i]) ||
        (i > 0 && (is_identifier_char(text[i - 1]) || text[i - 1] == '.' || text[i - 1] == ':' ||
                   text[i - 1] == '>')))
      continue;
    size_t j = i;
    while (j < text.size() && is_identifier_char(text[j])) ++j;
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<DtypeTest> test_of_term(std::string term, const Body& body) {
  term = trim_copy(term);
  while (term.size() >= 2 && term.front() == '(' && term.back() == ')')
    term = trim_copy(term.substr(1, term.size() - 2));
  bool eq = term.find("==") != std::string::npos, ne = term.find("!=") != std::string::npos;
  std::set<std::string> named = constants_in(term);
  for (const std::string& root : roots_in(term))
    if (body.converted(root)) return std::nullopt;
  if (eq != ne && !named.empty() && term.find("||") == std::string::npos &&
      term.find("&&") == std::string::npos)
    return DtypeTest{named, eq};
  if (!eq && !ne && term.find('!') == std::string::npos) {
    if (term.rfind("isFloatingType(", 0) == 0 ||
        term.find("::isFloatingType(") != std::string::npos)
      return DtypeTest{unite(kFloating, kReducedFloating), true};
    if (term.rfind("isComplexType(", 0) == 0 || term.find("::isComplexType(") != std::string::npos)
      return DtypeTest{unite(kComplex, {"complex32"}), true};
  }
  return std::nullopt;
}

// `a == kFloat || a == kDouble` (positive), `a != kFloat && a != kDouble` (negative), or a
// conjunction with one positive test (it narrows whatever the rest says).
std::optional<DtypeTest> test_of_condition(const std::string& cond, const Body& body) {
  auto ors = split_top(cond, "||");
  if (ors.size() > 1) {
    DtypeTest t;
    for (const auto& part : ors) {
      auto p = test_of_term(part, body);
      if (!p || !p->positive) return std::nullopt;
      t.dtypes.insert(p->dtypes.begin(), p->dtypes.end());
    }
    return t;
  }
  auto ands = split_top(cond, "&&");
  std::optional<DtypeTest> positive;
  DtypeTest negative{{}, false};
  bool all_negative = true;
  for (const auto& part : ands) {
    auto p = test_of_term(part, body);
    if (p && p->positive) {
      if (!positive) {
        positive = p;
      } else {
        std::set<std::string> both;
        std::set_intersection(positive->dtypes.begin(), positive->dtypes.end(), p->dtypes.begin(),
                              p->dtypes.end(), std::inserter(both, both.end()));
        positive->dtypes = both;
      }
    }
    if (p && !p->positive)
      negative.dtypes.insert(p->dtypes.begin(), p->dtypes.end());
    else
      all_negative = false;
  }
  if (positive) return positive;
  if (all_negative) return negative;
  return std::nullopt;
}

// AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, ...) -> its dtypes; nullopt when unknown.
std::optional<std::set<std::string>> macro_dtypes(const std::string& name,
                                                  const std::vector<std::string>& args) {
  std::string rest = name.substr(std::string("AT_DISPATCH_").size());
  if (rest.rfind("CASE_", 0) == 0) rest = rest.substr(5);
  if (rest == "CASE") {
    if (args.empty()) return std::nullopt;
    auto d = dtype_of_constant(trim_copy(args[0]));
    if (!d) return std::nullopt;
    return std::set<std::string>{*d};
  }
  static const std::vector<std::pair<std::string, std::set<std::string>>> bases = {
      {"ALL_TYPES_AND_COMPLEX", unite(unite(kIntegral, kFloating), kComplex)},
      {"FLOATING_AND_COMPLEX_TYPES", unite(kFloating, kComplex)},
      {"REDUCED_FLOATING_TYPES", kReducedFloating},
      {"FLOATING_TYPES", kFloating},
      {"INTEGRAL_TYPES", kIntegral},
      {"COMPLEX_TYPES", kComplex},
      {"ALL_TYPES", unite(kIntegral, kFloating)},
  };
  std::set<std::string> out;
  bool found = false;
  for (const auto& [base, dtypes] : bases) {
    if (rest.rfind(base, 0) != 0) continue;
    out = dtypes;
    rest = rest.substr(base.size());
    found = true;
    break;
  }
  if (!found) return std::nullopt;
  if (rest.rfind("_AND_HALF", 0) == 0) {
    out.insert("float16");
    rest = rest.substr(9);
  }
  if (rest.empty()) return out;
  if (rest.rfind("_AND", 0) != 0) return std::nullopt;
  std::string count = rest.substr(4);
  size_t n = count.empty() ? 1 : static_cast<size_t>(std::atoi(count.c_str()));
  if (n == 0 || n > args.size()) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    auto d = dtype_of_constant(trim_copy(args[i]));
    if (!d) return std::nullopt;
    out.insert(*d);
  }
  return out;
}

std::string names(const std::set<std::string>& dtypes) {
  return fmt::format("{}", fmt::join(dtypes, ", "));
}

// Whether the then-branch leaves the enclosing block: `return ...;` or a block ending with one.
bool exits(const Body& b, size_t then_begin, size_t then_end) {
  std::string t = trim_copy(b.text(then_begin, then_end + 1));
  if (!t.empty() && t.front() == '{') {
    t = trim_copy(t.substr(1, t.size() - 2));
    auto semis = split_top(t, ";");
    while (!semis.empty() && trim_copy(semis.back()).empty()) semis.pop_back();
    if (semis.empty()) return false;
    t = trim_copy(semis.back());
  }
  return t.rfind("return", 0) == 0 || t.rfind("throw", 0) == 0;
}

DtypeScope narrow(DtypeScope scope, const std::set<std::string>& dtypes, const std::string& why) {
  if (scope.every_dtype()) return {dtypes, why};
  std::set<std::string> both;
  std::set_intersection(scope.dtypes.begin(), scope.dtypes.end(), dtypes.begin(), dtypes.end(),
                        std::inserter(both, both.end()));
  // An empty intersection is dead code for every dtype; keep the narrower claim's dtypes.
  if (both.empty()) return scope;
  return {both, scope.why + "; " + why};
}

}  // namespace dtype_scan

std::optional<std::string> dtype_of_constant(const std::string& token) {
  std::string name = token;
  bool scalar_type = false;
  if (auto colon = name.rfind("::"); colon != std::string::npos) {
    scalar_type = name.compare(0, colon, "ScalarType") == 0 ||
                  (colon >= 12 && name.compare(colon - 12, 12, "::ScalarType") == 0);
    name = name.substr(colon + 2);
  }
  if (scalar_type) {
    std::string d = dtype_of_scalar_type(name);
    return d.empty() ? std::nullopt : std::optional<std::string>(d);
  }
  if (name.size() < 2 || name[0] != 'k') return std::nullopt;
  // kFloat, kBFloat16 name enumerators; kFloat32, kInt64, kUInt8 lowercase to torch's names.
  if (std::string d = dtype_of_scalar_type(name.substr(1)); !d.empty()) return d;
  std::string lowered = lower(name.substr(1));
  static const std::set<std::string> torch_names = {
      "uint8",   "int8",    "int16",     "int32",     "int64",     "float16",
      "float32", "float64", "complex32", "complex64", "complex128"};
  if (torch_names.count(lowered)) return lowered;
  return std::nullopt;
}

DtypeScope dtype_scope_at(const SourceText& source, int first, int last, int line) {
  using namespace dtype_scan;
  Body b(source, first, last);
  if (!b.ok() || line < first || line > last) return {};
  // The line's code: its first and last non-blank characters in the masked text.
  size_t from = source.line_start(line), to = source.line_start(line + 1);
  while (from < to && is_ascii_space(b.m[from])) ++from;
  while (to > from && is_ascii_space(b.m[to - 1])) --to;
  if (from >= to || from <= b.open || to - 1 >= b.close) return {};
  size_t ls = from, le = to - 1;
  DtypeScope scope;

  // Dispatch macros: the lambda runs only for the macro's dtypes; any other raises.
  for (size_t at : b.words_starting("AT_DISPATCH_")) {
    std::string name = b.identifier_at(at);
    size_t paren = b.skip(at + name.size());
    if (paren >= b.m.size() || b.m[paren] != '(') continue;
    size_t end = source.matching(paren);
    if (end == std::string::npos) continue;
    bool inside = (ls >= at || source.line_of(at) == line) && le <= end + 1;
    if (!inside) continue;
    std::vector<std::string> args;
    for (auto [a, z] : source.split_arguments(paren + 1, end)) args.push_back(b.text(a, z));
    if (auto d = macro_dtypes(name, args))
      scope = narrow(scope, *d,
                     fmt::format("inside {} at line {} ({})", name, source.line_of(at), names(*d)));
  }

  for (size_t at : b.words_starting("if")) {
    if (!b.word_at(at, "if")) continue;
    Body::If s = b.if_statement(at);
    if (!s.ok) continue;
    auto test = test_of_condition(b.text(s.cond_open + 1, s.cond_close), b);
    if (!test || test->dtypes.empty()) continue;
    std::string cond = trim_copy(b.text(s.cond_open + 1, s.cond_close));
    int at_line = source.line_of(at);
    // The condition and its then-branch matter only to the dtypes that pass it.
    if (test->positive && ls >= at && le <= s.then_end)
      scope =
          narrow(scope, test->dtypes, fmt::format("inside `if ({})` at line {}", cond, at_line));
    if (!test->positive && s.else_begin != std::string::npos && ls >= s.else_begin &&
        le <= s.else_end)
      scope = narrow(scope, test->dtypes,
                     fmt::format("in the else branch of `if ({})` at line {}", cond, at_line));
    // A guard: `if (dtype != kFloat) return ...;` leaves only kFloat for the rest of its block.
    if (!test->positive && s.else_begin == std::string::npos && ls > s.end &&
        exits(b, s.then_begin, s.then_end)) {
      size_t block = b.block_of(at);
      size_t block_end = block == b.open ? b.close : source.matching(block);
      if (le < block_end)
        scope = narrow(scope, test->dtypes,
                       fmt::format("after the guard `if ({})` at line {}", cond, at_line));
    }
  }

  // TORCH_CHECK(x.scalar_type() == kFloat, ...) lets only kFloat past it.
  for (size_t at : b.words_starting("TORCH_")) {
    std::string name = b.identifier_at(at);
    if (name != "TORCH_CHECK" && name != "TORCH_CHECK_TYPE" && name != "TORCH_INTERNAL_ASSERT")
      continue;
    size_t paren = b.skip(at + name.size());
    if (paren >= b.m.size() || b.m[paren] != '(') continue;
    size_t end = source.matching(paren);
    if (end == std::string::npos || ls <= end) continue;
    auto args = source.split_arguments(paren + 1, end);
    if (args.empty()) continue;
    auto test = test_of_condition(b.text(args[0].first, args[0].second), b);
    if (!test || !test->positive || test->dtypes.empty()) continue;
    size_t block = b.block_of(at);
    size_t block_end = block == b.open ? b.close : source.matching(block);
    if (le < block_end)
      scope = narrow(scope, test->dtypes,
                     fmt::format("after the check {} at line {}", name, source.line_of(at)));
  }
  return scope;
}

DtypeScope kernel_own_dtypes(const SourceText& source, int first, int last,
                             const std::set<std::string>& fallbacks) {
  using namespace dtype_scan;
  Body b(source, first, last);
  if (!b.ok() || fallbacks.empty()) return {};
  // Declarations may come first (a boxed kernel reads its arguments off the stack).
  size_t at = b.skip(b.open + 1);
  while (at < b.close && (b.word_at(at, "const") || b.word_at(at, "auto"))) {
    size_t end = b.statement_end(at);
    if (end == std::string::npos || end >= b.close) return {};
    at = b.skip(end + 1);
  }
  if (at >= b.close || !b.word_at(at, "if")) return {};
  Body::If s = b.if_statement(at);
  if (!s.ok || s.else_begin != std::string::npos) return {};
  auto test = test_of_condition(b.text(s.cond_open + 1, s.cond_close), b);
  if (!test || test->positive || test->dtypes.empty() || !exits(b, s.then_begin, s.then_end))
    return {};
  std::string then = b.text(s.then_begin, s.then_end + 1);
  for (const std::string& fallback : fallbacks) {
    std::string name =
        fallback.substr(fallback.rfind("::") == std::string::npos ? 0 : fallback.rfind("::") + 2);
    for (size_t i = then.find(name); i != std::string::npos; i = then.find(name, i + 1)) {
      bool whole = (i == 0 || !is_identifier_char(then[i - 1])) &&
                   (i + name.size() >= then.size() || !is_identifier_char(then[i + name.size()]));
      if (whole)
        return {test->dtypes,
                fmt::format("a kernel for {} only: line {} hands every other dtype to the "
                            "fallback {}",
                            names(test->dtypes), source.line_of(at), name)};
    }
  }
  return {};
}

}  // namespace ootci
