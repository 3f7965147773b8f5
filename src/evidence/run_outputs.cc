#include "evidence/run_outputs.h"

#include <fmt/format.h>

#include <pugixml.hpp>
#include <sstream>

#include "base/atomic_file.h"

namespace ootci {
namespace {

// "test/test_view_ops.py" + "TestX" -> "test.test_view_ops.TestX", as pytest names classes.
std::string classname(const TestResult& r) {
  std::string module = r.file;
  if (module.size() > 3 && module.compare(module.size() - 3, 3, ".py") == 0)
    module.resize(module.size() - 3);
  for (char& c : module)
    if (c == '/') c = '.';
  return r.cls.empty() ? module : module + "." + r.cls;
}

// Text safe for XML 1.0: at most `limit` bytes, cut at UTF-8 character boundaries (a log tail may
// start mid-character), and no control characters besides tab, newline and return.
std::string xml_text(const std::string& text, size_t limit) {
  size_t begin = 0, end = std::min(text.size(), limit);
  auto continuation = [&](size_t i) {
    return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (begin < end && continuation(begin)) ++begin;
  if (end < text.size())
    while (end > begin && continuation(end)) --end;
  std::string out = text.substr(begin, end - begin);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') c = '?';
  return out;
}

}  // namespace

void write_junit(const std::string& path, const std::vector<TestResult>& results) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "utf-8";
  auto suite = doc.append_child("testsuites").append_child("testsuite");
  int failures = 0, errors = 0, skipped = 0;
  double time = 0;
  for (const auto& r : results) {
    auto tc = suite.append_child("testcase");
    tc.append_attribute("classname") = classname(r).c_str();
    tc.append_attribute("name") = r.name.empty() ? r.file.c_str() : r.name.c_str();
    tc.append_attribute("file") = r.file.c_str();
    tc.append_attribute("time") = fmt::format("{:.3f}", r.duration_s).c_str();
    time += r.duration_s;
    auto props = tc.append_child("properties");
    auto prop = [&](const char* name, const std::string& value) {
      if (value.empty()) return;
      auto p = props.append_child("property");
      p.append_attribute("name") = name;
      p.append_attribute("value") = value.c_str();
    };
    prop("ootci.mode", mode_text(r.mode));
    prop("ootci.op", r.op);
    prop("ootci.dtype", r.dtype);
    prop("ootci.device", r.device);
    if (r.reruns) prop("ootci.reruns", std::to_string(r.reruns));
    if (r.flaky) prop("ootci.flaky", "1");
    if (!props.first_child()) tc.remove_child(props);
    std::string message = xml_text(r.message, 500);
    if (is_failure(r.outcome)) {
      auto f = tc.append_child(r.outcome == Outcome::kFailed ? "failure" : "error");
      f.append_attribute("message") = message.c_str();
      if (!r.error_class.empty()) f.append_attribute("type") = r.error_class.c_str();
      f.text() = xml_text(r.message, 100000).c_str();
      (r.outcome == Outcome::kFailed ? failures : errors)++;
    } else if (r.outcome == Outcome::kSkipped || r.outcome == Outcome::kXfailed) {
      auto s = tc.append_child("skipped");
      s.append_attribute("type") = r.outcome == Outcome::kXfailed ? "pytest.xfail" : "pytest.skip";
      s.append_attribute("message") = message.c_str();
      ++skipped;
    }
  }
  suite.prepend_attribute("time") = fmt::format("{:.3f}", time).c_str();
  suite.prepend_attribute("tests") = static_cast<unsigned>(results.size());
  suite.prepend_attribute("skipped") = skipped;
  suite.prepend_attribute("failures") = failures;
  suite.prepend_attribute("errors") = errors;
  suite.prepend_attribute("name") = "ootci";
  std::ostringstream out;
  doc.save(out, "  ");
  write_file_atomically(path, out.str());
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  write_file_atomically(path, value.dump(2) + "\n");
}

}  // namespace ootci
