#include "evidence/junit_ingest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <pugixml.hpp>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/text.h"
#include "base/utf8.h"

namespace ootci {
namespace {

constexpr size_t kMessageChars = 2000;

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
// Class names start with a capital letter; module names, by PEP 8, do not.
bool starts_upper(std::string_view s) {
  return !s.empty() && s[0] >= 'A' && s[0] <= 'Z';
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t dot = s.find('.');
    out.push_back(s.substr(0, dot));
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, size_t from, size_t to,
                 std::string_view sep) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (i > from) out += sep;
    out += parts[i];
  }
  return out;
}

// A complete <testcase> element found by the scanner, as offsets into the buffer.
struct Span {
  size_t begin;
  size_t end;
};

// Finds complete top-level <testcase> elements in a buffer that grows chunk by chunk, keeping
// its place between chunks. It knows just enough XML to not be fooled by markup inside
// comments, CDATA sections and quoted attribute values; pugixml checks everything else.
class TestcaseScanner {
 public:
  // Scans buf[pos_, buf.size()), appending complete testcases to `out`. Stops at the first
  // construct that is cut off by the end of the buffer.
  void scan(std::string_view buf, std::vector<Span>& out) {
    size_t n = buf.size();
    size_t p = pos_;
    while (p < n) {
      const void* lt = std::memchr(buf.data() + p, '<', n - p);
      if (!lt) {
        p = n;
        break;
      }
      p = static_cast<const char*>(lt) - buf.data();
      std::string_view rest = buf.substr(p);
      size_t end = 0;  // one past the construct; 0 while it is cut off
      if (rest.size() < 9 && (std::string_view("<![CDATA[").starts_with(rest) ||
                              std::string_view("<!--").starts_with(rest.substr(0, 4)))) {
        break;  // too short to tell a comment or CDATA section from other markup
      } else if (rest.starts_with("<!--")) {
        end = find_end(buf, p + 4, "-->");
      } else if (rest.starts_with("<![CDATA[")) {
        end = find_end(buf, p + 9, "]]>");
      } else if (rest.starts_with("<?")) {
        end = find_end(buf, p + 2, "?>");
      } else if (rest.starts_with("<!")) {
        end = find_end(buf, p + 2, ">");  // DOCTYPE; internal subsets are not expected here
      } else if (rest.starts_with("</")) {
        end = find_end(buf, p + 2, ">");
        if (end && depth_ > 0 && --depth_ == 0) out.push_back({testcase_begin_, end});
      } else {
        end = start_tag_end(buf, p + 1);
        if (end) start_tag(buf, p, end, out);
      }
      if (!end) break;
      p = end;
    }
    pos_ = p;
  }

  // Where the unconsumed part of the buffer starts: what the next chunk must be appended to.
  size_t keep_from() const { return depth_ > 0 ? testcase_begin_ : pos_; }
  // The buffer lost its first `n` bytes.
  void shift(size_t n) {
    pos_ -= n;
    if (depth_ > 0) testcase_begin_ -= n;
  }
  bool inside_testcase() const { return depth_ > 0; }
  size_t testcase_begin() const { return testcase_begin_; }
  size_t pos() const { return pos_; }
  const std::string& root() const { return root_; }

 private:
  static size_t find_end(std::string_view buf, size_t from, std::string_view terminator) {
    size_t at = buf.find(terminator, from);
    return at == std::string_view::npos ? 0 : at + terminator.size();
  }

  // One past the '>' of a start tag whose name begins at `from`; '>' may appear in quotes.
  static size_t start_tag_end(std::string_view buf, size_t from) {
    char quote = 0;
    for (size_t i = from; i < buf.size(); ++i) {
      char c = buf[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        return i + 1;
      }
    }
    return 0;
  }

  void start_tag(std::string_view buf, size_t begin, size_t end, std::vector<Span>& out) {
    bool self_closing = buf[end - 2] == '/';
    if (depth_ > 0) {
      if (!self_closing) ++depth_;
      return;
    }
    size_t name_end = begin + 1;
    while (name_end < end && !is_ascii_space(buf[name_end]) && buf[name_end] != '/' &&
           buf[name_end] != '>')
      ++name_end;
    std::string_view name = buf.substr(begin + 1, name_end - begin - 1);
    if (root_.empty()) root_ = name;
    if (name != "testcase") return;
    testcase_begin_ = begin;
    if (self_closing)
      out.push_back({begin, end});
    else
      depth_ = 1;
  }

  size_t pos_ = 0;
  size_t depth_ = 0;  // element depth inside the current testcase; 0 outside one
  size_t testcase_begin_ = 0;
  std::string root_;  // the first element's name
};

std::string attr(pugi::xml_node n, const char* name) {
  return n.attribute(name).value();
}

// Text and CDATA content, concatenated.
std::string text_of(pugi::xml_node n) {
  std::string out;
  for (pugi::xml_node c : n.children())
    if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) out += c.value();
  return out;
}

// Children that record an earlier attempt: pytest-rerunfailures and PyTorch's LogXMLReruns
// write <rerun>, surefire-style reports <flakyFailure>/<rerunFailure> and friends.
bool is_rerun(std::string_view name) {
  return name == "rerun" || name == "rerunFailure" || name == "rerunError" ||
         name == "flakyFailure" || name == "flakyError";
}

double parse_seconds(const char* s) {
  double v = 0;
  std::from_chars(s, s + std::strlen(s), v);
  return v;
}

TestResult to_result(pugi::xml_node tc) {
  TestResult t;
  JunitLocation where = junit_location(attr(tc, "classname"), attr(tc, "file"));
  t.file = std::move(where.file);
  t.cls = std::move(where.cls);
  t.name = attr(tc, "name");
  for (const std::string* part : {&t.file, &t.cls, &t.name}) {
    if (part->empty()) continue;
    if (!t.test_id.empty()) t.test_id += "::";
    t.test_id += *part;
  }
  t.duration_s = parse_seconds(tc.attribute("time").value());

  pugi::xml_node failure, error, skipped;
  for (pugi::xml_node c : tc.children()) {
    std::string_view name = c.name();
    if (name == "failure" && !failure)
      failure = c;
    else if (name == "error" && !error)
      error = c;
    else if (name == "skipped" && !skipped)
      skipped = c;
    else if (is_rerun(name))
      ++t.reruns;
    else if (name == "properties") {
      for (pugi::xml_node p : c.children("property")) {
        std::string_view key = p.attribute("name").value();
        std::string value = p.attribute("value").value();
        if (key == "ootci.mode")
          t.mode = parse_test_mode(value);
        else if (key == "ootci.op")
          t.op = value;
        else if (key == "ootci.dtype")
          t.dtype = value;
        else if (key == "ootci.device")
          t.device = value;
      }
    }
  }
  // A test whose call failed and whose teardown errored has both; the failure is the news.
  pugi::xml_node problem = failure ? failure : error ? error : skipped;
  if (problem) {
    std::string message = attr(problem, "message");
    std::string body = text_of(problem);
    t.message = truncate_utf8_chars(message.empty() ? body : message, kMessageChars);
    if (problem == skipped) {
      t.outcome = attr(skipped, "type") == "pytest.xfail" ? Outcome::kXfailed : Outcome::kSkipped;
    } else {
      t.outcome = problem == failure ? Outcome::kFailed : Outcome::kError;
      if (t.message.starts_with("[XPASS(strict)]")) {
        t.error_class = kStrictXpassError;
      } else {
        t.error_class = attr(problem, "type");
        if (t.error_class.empty()) t.error_class = error_class_in(message);
        // pytest drops "AssertionError: " from the message of a rewritten `assert`.
        if (t.error_class.empty() && message.starts_with("assert "))
          t.error_class = "AssertionError";
        if (t.error_class.empty()) t.error_class = error_class_in(body);
      }
    }
  } else {
    t.outcome = Outcome::kPassed;
    t.flaky = t.reruns > 0;
  }
  return t;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

JunitLocation junit_location(const std::string& classname, const std::string& file_attr) {
  std::vector<std::string_view> parts = split_dots(classname);
  size_t module_end = parts.size();  // parts[0, module_end) name the module, the rest classes
  std::string file = file_attr;
  std::string_view module_of_file = file_attr;
  if (module_of_file.ends_with(".py")) module_of_file.remove_suffix(3);
  std::string dotted_file(module_of_file);
  std::replace(dotted_file.begin(), dotted_file.end(), '/', '.');
  if (!file_attr.empty() &&
      (classname == dotted_file || classname.starts_with(dotted_file + "."))) {
    // The file attribute says where the module ends, even for capitalised module names.
    module_end = split_dots(dotted_file).size();
  } else {
    while (module_end > 0 && starts_upper(parts[module_end - 1])) --module_end;
    if (file.empty() && module_end > 0) file = join(parts, 0, module_end, "/") + ".py";
  }
  return {file, join(parts, module_end, parts.size(), "::")};
}

std::string error_class_in(const std::string& message) {
  static constexpr std::string_view kSuffixes[] = {"Error", "Exception", "Exit", "Interrupt",
                                                   "Warning"};
  size_t n = message.size();
  for (size_t i = 0; i < n;) {
    if (!is_ident_char(message[i]) ||
        (i > 0 && (is_ident_char(message[i - 1]) || message[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && (is_ident_char(message[j]) || message[j] == '.')) ++j;
    std::string_view token(message.data() + i, j - i);
    while (token.ends_with('.')) token.remove_suffix(1);
    std::string_view last = token.substr(token.rfind('.') + 1);
    bool followed_ok = j == n || message[j] == ':' || message[j] == '\n' || message[j] == '\r';
    if (followed_ok && !last.empty() && !(last[0] >= '0' && last[0] <= '9') &&
        std::any_of(std::begin(kSuffixes), std::end(kSuffixes),
                    [&](std::string_view s) { return last.ends_with(s); }))
      return std::string(last);
    i = j;
  }
  return "";
}

void ingest_junit(const std::string& path, const std::function<void(TestResult&&)>& sink,
                  size_t chunk_bytes) {
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
  if (!in) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  chunk_bytes = std::max<size_t>(chunk_bytes, 1);

  // pugixml has no SAX API; parsing complete testcases a chunk at a time bounds memory.
  TestcaseScanner scanner;
  std::string buf;          // unconsumed bytes, then the newest chunk
  size_t buf_offset = 0;    // file offset of buf[0]
  std::vector<Span> spans;  // complete testcases in buf
  std::string fragment;     // those testcases, back to back, for one parse
  std::vector<std::pair<size_t, size_t>> fragment_to_file;  // (fragment offset, file offset)
  pugi::xml_document doc;
  bool eof = false;
  while (!eof) {
    size_t old_size = buf.size();
    buf.resize(old_size + chunk_bytes);
    size_t got = std::fread(buf.data() + old_size, 1, chunk_bytes, in.get());
    buf.resize(old_size + got);
    if (got < chunk_bytes) {
      if (std::ferror(in.get()))
        throw Error(fmt::format("{}: read failed at byte {}: {}", path, buf_offset + buf.size(),
                                std::strerror(errno)));
      eof = true;
    }

    spans.clear();
    scanner.scan(buf, spans);
    if (!spans.empty()) {
      fragment.clear();
      fragment_to_file.clear();
      for (const Span& s : spans) {
        fragment_to_file.emplace_back(fragment.size(), buf_offset + s.begin);
        fragment.append(buf, s.begin, s.end - s.begin);
      }
      pugi::xml_parse_result parsed =
          doc.load_buffer_inplace(fragment.data(), fragment.size(),
                                  pugi::parse_default | pugi::parse_fragment, pugi::encoding_utf8);
      if (!parsed) {
        size_t at = static_cast<size_t>(parsed.offset);
        auto it = std::upper_bound(fragment_to_file.begin(), fragment_to_file.end(),
                                   std::make_pair(at, SIZE_MAX));
        --it;  // the first span starts at fragment offset 0
        throw Error(fmt::format("{}: byte {}: invalid XML: {}", path, it->second + at - it->first,
                                parsed.description()));
      }
      for (pugi::xml_node tc : doc.children("testcase")) sink(to_result(tc));
    }

    size_t keep = scanner.keep_from();
    buf.erase(0, keep);
    buf_offset += keep;
    scanner.shift(keep);
  }

  if (scanner.inside_testcase())
    throw Error(fmt::format("{}: byte {}: file ends inside this <testcase>", path,
                            buf_offset + scanner.testcase_begin()));
  if (scanner.pos() < buf.size())
    throw Error(
        fmt::format("{}: byte {}: file ends inside markup", path, buf_offset + scanner.pos()));
  if (scanner.root() != "testsuites" && scanner.root() != "testsuite")
    throw Error(fmt::format("{}: not a JUnit XML report (root element {})", path,
                            scanner.root().empty() ? "missing" : "<" + scanner.root() + ">"));
}

}  // namespace ootci
