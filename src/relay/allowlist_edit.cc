#include "relay/allowlist_edit.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <vector>

#include "base/error.h"
#include "base/text.h"
#include "base/yaml_doc.h"
#include "relay/allowlist.h"

namespace ootci {
namespace {

struct Range {
  size_t begin = 0, end = 0;  // lines [begin, end)
};

bool is_comment(const std::string& line) {
  return starts_after_indent(line, '#');
}

bool is_content(const std::string& line) {
  return !is_blank(line) && !is_comment(line);
}

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\/-])");
  return std::regex_replace(s, special, R"(\$&)");
}

std::string line_numbers(const std::vector<size_t>& at) {
  std::string out;
  for (size_t i : at) out += (out.empty() ? "" : ", ") + std::to_string(i + 1);
  return out;
}

class Editor {
 public:
  Editor(const std::string& text, std::string file) : file_(std::move(file)) {
    lines_ = lines(text);
    final_newline_ = !text.empty() && text.back() == '\n';
  }

  [[noreturn]] void fail(const std::string& why) const { throw Error(file_ + ": " + why); }

  // The top-level `name:` section: its key line and every line up to the next top-level content
  // line. There must be exactly one, in block style.
  Range section(const std::string& name) const {
    std::regex key("^([\"']?)" + regex_escape(name) + R"(\1\s*:(.*)$)");
    std::vector<size_t> at;
    std::smatch m;
    for (size_t i = 0; i < lines_.size(); ++i)
      if (std::regex_match(lines_[i], m, key)) at.push_back(i);
    if (at.size() != 1)
      fail(fmt::format("expected one top-level {} key, found {}{}", name, at.size(),
                       at.empty() ? "" : " (lines " + line_numbers(at) + ")"));
    std::regex_match(lines_[at[0]], m, key);
    std::string rest = trim(m[2].str());
    if (!rest.empty() && rest[0] != '#')
      fail(fmt::format("{} must be in block style (line {})", name, at[0] + 1));
    size_t end = at[0] + 1;
    while (end < lines_.size() && !(is_content(lines_[end]) && indent_of(lines_[end]) == 0)) ++end;
    return {at[0], end};
  }

  // The one indented line in `r` whose key is `key`, as written (quoted or not).
  size_t key_line(Range r, const std::string& key) const {
    std::regex re(R"(^\s+(["']?))" + regex_escape(key) + R"(\1\s*:(\s.*)?$)");
    std::vector<size_t> at;
    for (size_t i = r.begin; i < r.end; ++i)
      if (std::regex_match(lines_[i], re)) at.push_back(i);
    if (at.size() != 1)
      fail(fmt::format("expected one line for '{}', found {}{}", key, at.size(),
                       at.empty() ? "" : " (lines " + line_numbers(at) + ")"));
    return at[0];
  }

  // The line and those after it indented deeper (blank lines skipped), trailing blanks excluded.
  size_t block_end(size_t start) const {
    size_t indent = indent_of(lines_[start]), end = start + 1;
    for (size_t i = start + 1; i < lines_.size(); ++i) {
      if (is_blank(lines_[i])) continue;
      if (indent_of(lines_[i]) <= indent) break;
      end = i + 1;
    }
    return end;
  }

  // The first of the comment lines directly above `index` at its indentation, not above `stop`.
  size_t comments_above(size_t index, size_t stop) const {
    size_t first = index, indent = indent_of(lines_[index]);
    while (first > stop && is_comment(lines_[first - 1]) && indent_of(lines_[first - 1]) == indent)
      --first;
    return first;
  }

  // Deletes lines [r.begin, r.end), and a blank line the cut would leave doubled.
  void cut(Range r) {
    lines_.erase(lines_.begin() + r.begin, lines_.begin() + r.end);
    if (r.begin > 0 && r.begin < lines_.size() && is_blank(lines_[r.begin - 1]) &&
        is_blank(lines_[r.begin]))
      lines_.erase(lines_.begin() + r.begin);
  }

  void insert(size_t at, const std::vector<std::string>& more) {
    lines_.insert(lines_.begin() + at, more.begin(), more.end());
  }

  const std::string& line(size_t i) const { return lines_[i]; }

  std::string text() const {
    std::string out;
    for (size_t i = 0; i < lines_.size(); ++i) out += (i ? "\n" : "") + lines_[i];
    return out + (final_newline_ ? "\n" : "");
  }

 private:
  std::string file_;
  std::vector<std::string> lines_;
  bool final_newline_ = false;
};

// YAML as JSON with every scalar as text: what the comparison of old and new data needs.
nlohmann::json as_json(const YAML::Node& n) {
  if (!n || n.IsNull()) return nullptr;
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : n) out.push_back(as_json(item));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto it = n.begin(); it != n.end(); ++it) out[it->first.Scalar()] = as_json(it->second);
  return out;
}

// Top-level sections that hold nothing (null, {} or []) are left out, so "L3:" and no L3 agree.
nlohmann::json without_empty_sections(nlohmann::json data) {
  if (!data.is_object()) return data;
  for (auto it = data.begin(); it != data.end();)
    it = it->is_null() || it->empty() ? data.erase(it) : std::next(it);
  return data;
}

nlohmann::json load(const std::string& text, const Editor& ed, const char* which) {
  try {
    return as_json(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    ed.fail(fmt::format("{} is not valid YAML: {}", which, e.what()));
  }
}

}  // namespace

std::string demote_in_allowlist(const std::string& text, const std::string& repo,
                                const std::string& file) {
  Editor ed(text, file);
  // Only a valid allowlist is edited (a repo listed twice, say, is refused with its lines).
  Allowlist::parse(load_yaml_text(file, text));
  // The sections first: a key written twice is read as one by the parser.
  Range l3 = ed.section("L3");
  Range l2 = ed.section("L2");
  nlohmann::json old_data = load(text, ed, "the allowlist");
  // Where the repo is: its device and its key as written (CRCR trims spaces and slashes).
  std::string device, key;
  if (old_data.is_object() && old_data.contains("L3") && old_data["L3"].is_object())
    for (auto& [dev, group] : old_data["L3"].items()) {
      if (!group.is_object()) continue;
      for (auto& [k, v] : group.items()) {
        std::string name = trim(k);
        size_t a = name.find_first_not_of('/'), b = name.find_last_not_of('/');
        if (a != std::string::npos && name.substr(a, b - a + 1) == repo) device = dev, key = k;
      }
    }
  if (key.empty()) ed.fail(repo + " is not at L3");
  // Participation stays with the repo; oncalls and device do not exist at L2.
  nlohmann::json value = old_data["L3"][device][key];
  nlohmann::json events =
      value.is_object() && value.contains("events") ? value["events"] : nlohmann::json();
  if (!events.is_null() && !events.is_array()) events = nlohmann::json::array({events});

  size_t dev_line = ed.key_line({l3.begin + 1, l3.end}, device);
  size_t dev_end = ed.block_end(dev_line);
  size_t entry_line = ed.key_line({dev_line + 1, dev_end}, key);
  size_t entry_end = ed.block_end(entry_line);
  size_t entry_first = ed.comments_above(entry_line, dev_line + 1);
  bool others = false;
  for (size_t i = dev_line + 1; i < dev_end; ++i)
    if ((i < entry_first || i >= entry_end) && is_content(ed.line(i))) others = true;
  Range cut = others ? Range{entry_first, entry_end}
                     : Range{ed.comments_above(dev_line, l3.begin + 1), dev_end};

  // The new L2 item, after the entry's comments, at the indentation L2's items use.
  size_t indent = 2, last = l2.begin;
  bool indent_found = false;
  static const std::regex item(R"(^(\s*)-(\s|$).*)");
  std::smatch m;
  for (size_t i = l2.begin + 1; i < l2.end; ++i) {
    const std::string& l = ed.line(i);
    if (!is_content(l)) continue;
    last = i;
    if (!indent_found && std::regex_match(l, m, item)) indent = m[1].length(), indent_found = true;
  }
  std::vector<std::string> added;
  std::string pad(indent, ' ');
  for (size_t i = entry_first; i < entry_line; ++i) added.push_back(pad + trim(ed.line(i)));
  std::string entry = pad + "- " + repo;
  if (!events.is_null()) {
    std::string names;
    for (const auto& e : events) names += (names.empty() ? "" : ", ") + e.get<std::string>();
    entry += ": {events: [" + names + "]}";
  }
  added.push_back(entry);
  // The later edit first, so the earlier one's line numbers still hold.
  size_t insert_at = ed.block_end(last);
  if (insert_at > cut.begin) {
    ed.insert(insert_at, added);
    ed.cut(cut);
  } else {
    ed.cut(cut);
    ed.insert(insert_at, added);
  }
  std::string out = ed.text();

  // Exactly the move, or nothing.
  nlohmann::json expected = old_data;
  expected["L3"][device].erase(key);
  if (expected["L3"][device].empty()) expected["L3"].erase(device);
  if (!expected["L2"].is_array()) expected["L2"] = nlohmann::json::array();
  expected["L2"].push_back(events.is_null() ? nlohmann::json(repo)
                                            : nlohmann::json{{repo, {{"events", events}}}});
  if (without_empty_sections(load(out, ed, "the edited allowlist")) !=
      without_empty_sections(expected))
    ed.fail(fmt::format("moving {} changed more than its entry", repo));
  Allowlist::parse(load_yaml_text(file, out));
  return out;
}

}  // namespace ootci
