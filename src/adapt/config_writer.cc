#include "adapt/config_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "adapt/tolerance.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/text.h"
#include "base/yaml_doc.h"

namespace ootci {

namespace {

constexpr const char* kMarker = "# ootci:";
// A marker's reason continues on comment lines whose text starts under the reason's first word.
constexpr const char* kContinuation = "#        ";
constexpr const char* kDefaultItemIndent = "        ";
constexpr size_t kLineWidth = 100;        // a reason wraps at this column
constexpr size_t kShortReasonChars = 40;  // a mode line's reason gets at least this much room

// The reason of a `# ootci: <reason>` line, or nullopt for any other line.
std::optional<std::string> marker_reason(const std::string& line) {
  size_t n = line.find_first_not_of(" \t");
  if (n == std::string::npos || line.compare(n, std::strlen(kMarker), kMarker) != 0)
    return std::nullopt;
  std::string reason = line.substr(n + std::strlen(kMarker));
  size_t start = reason.find_first_not_of(' ');
  return start == std::string::npos ? "" : reason.substr(start);
}

// The text of a marker's continuation line, or nullopt for any other line.
std::optional<std::string> continuation(const std::string& line) {
  size_t n = line.find_first_not_of(" \t");
  size_t width = std::strlen(kContinuation);
  if (n == std::string::npos || line.compare(n, width, kContinuation) != 0 ||
      line.size() == n + width || line[n + width] == ' ')
    return std::nullopt;
  return line.substr(n + width);
}

// The reason of an entry's leading comment lines: the first marker's, continuation lines joined.
std::optional<std::string> leading_reason(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    std::optional<std::string> reason = marker_reason(lines[i]);
    if (!reason) continue;
    while (i + 1 < lines.size()) {
      std::optional<std::string> more = continuation(lines[i + 1]);
      if (!more) break;
      *reason += " " + *more;
      ++i;
    }
    return reason;
  }
  return std::nullopt;
}

bool is_item(const std::string& line, size_t indent) {
  return indent_of(line) == indent && line.size() > indent && line[indent] == '-' &&
         (line.size() == indent + 1 || line[indent + 1] == ' ');
}

// A scalar as YAML reads it back unchanged: plain when it is safe, else double-quoted.
std::string yaml_scalar(const std::string& s) {
  static const std::regex kPlain(R"([A-Za-z0-9_][A-Za-z0-9_:.\\()+=/-]*)");
  if (std::regex_match(s, kPlain) && s.back() != ':' && s.find(": ") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::vector<std::string> default_head(const std::string& relpath,
                                      const std::vector<std::string>& labels) {
  std::vector<std::string> quoted;
  for (const auto& l : labels) quoted.push_back(yaml_scalar(l));
  return {
      "# Proposed by `ootci select propose` from execution evidence (docs/select.md). An entry",
      "# under a `# ootci:` comment is rewritten by the next proposal; delete that comment line to",
      "# make the entry yours: ootci then keeps it as written and leaves its tests alone.",
      "test_suite_config:",
      fmt::format("  labels: [{}]", fmt::join(quoted, ", ")),
      "  files:",
      "    - path: ${TORCH_ROOT}/" + relpath,
      "      unlisted_test_mode: skip",
  };
}

// Names grouped into entries, in the order they are written: dtype-restricted entries first, so
// Spyre picks them for their dtypes before a method's unrestricted entry (which, with global
// supported_dtypes, would cover those dtypes too).
std::vector<std::vector<const NameDecision*>> group_entries(
    const std::vector<NameDecision>& decisions) {
  std::vector<std::vector<const NameDecision*>> groups;
  for (const auto& d : decisions) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g[0]->same_settings(d); });
    if (it == groups.end())
      groups.push_back({&d});
    else
      it->push_back(&d);
  }
  for (auto& g : groups)
    std::sort(g.begin(), g.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a[0]->restricted() != b[0]->restricted()) return a[0]->restricted();
    if (a[0]->mode != b[0]->mode) return a[0]->mode < b[0]->mode;
    if (a[0]->name != b[0]->name) return a[0]->name < b[0]->name;
    if (a[0]->dtypes_include != b[0]->dtypes_include)
      return a[0]->dtypes_include < b[0]->dtypes_include;
    return a[0]->reason < b[0]->reason;
  });
  return groups;
}

// `# ootci: <reason>`, wrapped at kLineWidth on spaces onto continuation lines (one space is cut
// at each break, so joining the lines with one space gives the reason back).
void render_marker(const std::string& reason, const std::string& in,
                   std::vector<std::string>& out) {
  std::string prefix = in + kMarker + " ";
  std::string rest = one_line(reason);
  while (prefix.size() + rest.size() > kLineWidth) {
    size_t room = kLineWidth - prefix.size();
    size_t cut = rest.rfind(' ', room);
    if (cut == std::string::npos || cut == 0) cut = rest.find(' ', room);
    if (cut == std::string::npos) break;
    out.push_back(prefix + rest.substr(0, cut));
    rest = rest.substr(cut + 1);
    prefix = in + kContinuation;
  }
  out.push_back(prefix + rest);
}

// The reason's first clause, as Spyre writes one on the mode line: `mode: xfail  # <short>`, cut
// on a space to end the line by kLineWidth (and to no fewer than kShortReasonChars).
std::string short_reason(const std::string& reason, size_t room) {
  room = std::max(room, kShortReasonChars);
  std::string s = one_line(reason);
  s = s.substr(0, std::min(s.find(" ("), s.find("; ")));
  if (s.size() <= room) return s;
  size_t cut = s.rfind(' ', room - 4);
  return s.substr(0, cut == std::string::npos ? room - 4 : cut) + " ...";
}

void render_entry(const std::vector<const NameDecision*>& names, const std::string& in,
                  std::vector<std::string>& out) {
  const NameDecision& d = *names[0];
  render_marker(d.reason, in, out);
  out.push_back(in + "- names:");
  for (const auto* n : names) out.push_back(in + "    - " + yaml_scalar(n->name));
  std::string mode = in + "  mode: " + to_string(d.mode);
  if (d.mode != TestMode::kMandatorySuccess && !d.reason.empty()) {
    mode += "  # ";
    mode += short_reason(d.reason, kLineWidth - std::min(kLineWidth, mode.size()));
  }
  out.push_back(mode);
  if (d.ops_exclude.empty() && d.dtypes_exclude.empty() && d.dtypes_include.empty()) return;
  out.push_back(in + "  edits:");
  auto list = [&](const char* key, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out.push_back(in + "      " + key + ":");
    for (const auto& x : names) out.push_back(in + "        - name: " + yaml_scalar(x));
  };
  if (!d.ops_exclude.empty()) {
    out.push_back(in + "    ops:");
    list("exclude", d.ops_exclude);
  }
  if (!d.dtypes_include.empty() || !d.dtypes_exclude.empty()) {
    out.push_back(in + "    dtypes:");
    const auto includes_at = static_cast<std::ptrdiff_t>(out.size());
    list("include", d.dtypes_include);
    for (const auto& [dtype, p] : d.dtype_precision) {
      // Under its `- name:` line: the include's precision (Spyre's per-test, per-dtype one).
      std::string name_line = in + "        - name: " + yaml_scalar(dtype);
      auto at = std::find(out.begin() + includes_at, out.end(), name_line);
      if (at == out.end()) continue;
      std::vector<std::string> lines = {in + "          precision:"};
      if (p.atol) lines.push_back(in + "            atol: " + format_number(*p.atol));
      if (p.rtol) lines.push_back(in + "            rtol: " + format_number(*p.rtol));
      out.insert(at + 1, lines.begin(), lines.end());
    }
    list("exclude", d.dtypes_exclude);
  }
}

std::string rule_name(const Rule& r) {
  return (r.class_name ? *r.class_name + "::" : "") + r.method;
}

// The dashes' column of the `tests:` list whose items start at line `from`: the first content
// line's, if it is an item at or right of the key; none when the list is empty.
std::optional<size_t> items_column(const std::string& name, const std::vector<std::string>& lines,
                                   size_t from, size_t key_indent) {
  for (size_t j = from; j < lines.size(); ++j) {
    if (is_blank(lines[j]) || starts_after_indent(lines[j], '#')) continue;
    size_t in = indent_of(lines[j]);
    if (in >= key_indent && is_item(lines[j], in)) return in;
    if (in > key_indent)
      throw Error(
          fmt::format("{}:{}: tests: write the list in block style (one `- names:` item "
                      "per line) so ootci can edit it",
                      name, j + 1));
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

ConfigLayout split_config(const std::string& name, const std::string& text) {
  std::vector<std::string> lines = ootci::lines(text);
  static const std::regex kTests(R"((\s*)tests:\s*(\S.*)?)");
  std::vector<size_t> found;
  for (size_t i = 0; i < lines.size(); ++i)
    if (!starts_after_indent(lines[i], '#') && std::regex_match(lines[i], std::regex(kTests)))
      found.push_back(i);
  if (found.size() != 1)
    throw Error(
        fmt::format("{}: expected one `tests:` list (one upstream file per config), found {}", name,
                    found.size()));
  size_t t = found[0];
  std::smatch m;
  std::regex_match(lines[t], m, kTests);
  std::string value = m[2].str();
  std::string key_indent = m[1].str();
  bool flow_empty = std::regex_match(value, std::regex(R"(\[\s*\]\s*(#.*)?)"));
  if (!value.empty() && value[0] != '#' && !flow_empty)
    throw Error(
        fmt::format("{}:{}: tests: write the list in block style (one `- names:` item per "
                    "line) so ootci can edit it",
                    name, t + 1));

  ConfigLayout layout;
  layout.head.assign(lines.begin(), lines.begin() + static_cast<long>(t));
  layout.tests_line = key_indent + "tests:";
  layout.item_indent = std::string(key_indent.size() + 2, ' ');

  std::vector<std::string> pending;  // comments and blank lines not yet placed
  size_t i = t + 1;
  if (!flow_empty) {
    size_t dash =
        items_column(name, lines, i, key_indent.size()).value_or(layout.item_indent.size());
    layout.item_indent = std::string(dash, ' ');
    bool in_list = true;
    for (; i < lines.size() && in_list; ++i) {
      const std::string& line = lines[i];
      if (is_blank(line) || starts_after_indent(line, '#')) {
        pending.push_back(line);
        continue;
      }
      size_t in = indent_of(line);
      if (is_item(line, dash)) {
        ConfigLayout::Entry e;
        if (auto reason = leading_reason(pending)) {
          e.generated = true;
          e.reason = *reason;
        }
        e.leading = pending.size();
        e.lines = std::move(pending);
        pending.clear();
        e.lines.push_back(line);
        e.first_line = e.last_line = static_cast<int>(i + 1);
        layout.entries.push_back(std::move(e));
      } else if (in > dash && !layout.entries.empty()) {
        auto& e = layout.entries.back();
        e.lines.insert(e.lines.end(), pending.begin(), pending.end());
        pending.clear();
        e.lines.push_back(line);
        e.last_line = static_cast<int>(i + 1);
      } else {
        in_list = false;
        --i;  // this line starts the tail
      }
    }
  }
  layout.tail = std::move(pending);
  layout.tail.insert(layout.tail.end(),
                     lines.begin() + static_cast<long>(std::min(i, lines.size())), lines.end());
  return layout;
}

namespace {

// The file with only ootci's entries, or only people's, and where each entry's item lies in it.
// Each half must validate on its own; together they may name a test twice, which the rewrite
// resolves (a person's entry wins).
struct Half {
  std::string text;
  std::vector<const ConfigLayout::Entry*> entries;
  std::vector<std::pair<int, int>> lines;  // 1-based first and last line of each entry's item
};

Half half_of(const ConfigLayout& layout, bool generated) {
  Half h;
  std::vector<std::string> out = layout.head;
  size_t tests_at = out.size();
  out.push_back(layout.tests_line);
  for (const auto& e : layout.entries) {
    if (e.generated != generated) continue;
    int first = static_cast<int>(out.size() + e.leading) + 1;
    int last = first + (e.last_line - e.first_line);
    out.insert(out.end(), e.lines.begin(), e.lines.end());
    h.entries.push_back(&e);
    h.lines.emplace_back(first, last);
  }
  if (h.entries.empty()) out[tests_at] += " []";
  out.insert(out.end(), layout.tail.begin(), layout.tail.end());
  for (const auto& line : out) h.text += line + "\n";
  return h;
}

SuiteConfigResult parse_text(const std::string& path, const std::string& text) {
  try {
    return parse_suite_config(load_yaml_text(path, text));
  } catch (const Error& e) {
    SuiteConfigResult r;
    r.errors.push_back(e.what());
    return r;
  }
}

[[noreturn]] void invalid(const std::string& path, const std::vector<std::string>& errors) {
  std::string all;
  for (const auto& e : errors) all += "\n  " + e;
  throw Error(
      fmt::format("{} is not a valid test-suite config, so it is left alone:{}", path, all));
}

}  // namespace

ExistingConfig read_existing_config(const std::string& path) {
  std::optional<std::string> text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("{}: cannot open file", path));
  SuiteConfigResult whole = parse_text(path, *text);  // its errors name the real lines
  ExistingConfig c;
  c.path = path;
  try {
    c.layout = split_config(path, *text);
  } catch (const Error&) {
    if (!whole.ok()) invalid(path, whole.errors);
    throw;
  }
  for (const auto& e : c.layout.entries) c.human_entries += !e.generated;
  c.labels = whole.config.labels;
  for (bool generated : {true, false}) {
    Half half = half_of(c.layout, generated);
    SuiteConfigResult parsed = parse_text(path, half.text);
    if (!parsed.ok()) invalid(path, whole.ok() ? parsed.errors : whole.errors);
    if (parsed.config.files.size() != 1)
      throw Error(
          fmt::format("{}: expected one entry under files (one upstream file per config), "
                      "found {}",
                      path, parsed.config.files.size()));
    for (const Rule& r : parsed.config.files[0].rules) {
      int line = parse_yaml_where(r.source).line;
      size_t i = 0;
      while (i < half.lines.size() &&
             !(half.lines[i].first <= line && line <= half.lines[i].second))
        ++i;
      if (i == half.lines.size())
        throw Error(
            fmt::format("{}: a test name is in no entry of the `tests:` list (is the list "
                        "indented consistently?)",
                        path));
      if (!generated) {
        c.human_rules.push_back(r);
        continue;
      }
      NameDecision d;
      d.name = rule_name(r);
      d.mode = r.mode;
      d.ops_exclude = r.ops_exclude;
      d.dtypes_exclude = r.dtypes_exclude;
      for (const auto& include : r.dtypes_include) {
        d.dtypes_include.push_back(include.name);
        if (include.precision) d.dtype_precision[include.name] = *include.precision;
      }
      std::sort(d.ops_exclude.begin(), d.ops_exclude.end());
      std::sort(d.dtypes_exclude.begin(), d.dtypes_exclude.end());
      std::sort(d.dtypes_include.begin(), d.dtypes_include.end());
      d.reason = half.entries[i]->reason;
      c.generated.push_back(std::move(d));
    }
  }
  return c;
}

std::string config_file_name(const std::string& relpath) {
  std::string p = relpath;
  if (p.rfind("test/", 0) == 0) p = p.substr(5);
  if (p.size() > 3 && p.compare(p.size() - 3, 3, ".py") == 0) p.resize(p.size() - 3);
  std::replace(p.begin(), p.end(), '/', '.');
  return p + ".yaml";
}

std::vector<NameDecision> without_human(const std::vector<NameDecision>& decisions,
                                        const std::vector<Rule>& human_rules) {
  if (human_rules.empty()) return decisions;
  std::vector<NameDecision> out;
  for (const auto& d : decisions)
    if (!human_owns(human_rules, d.name)) out.push_back(d);
  return out;
}

size_t entry_count(const std::vector<NameDecision>& decisions) {
  return group_entries(decisions).size();
}

std::string render_config(const std::string& relpath, const std::vector<std::string>& labels,
                          const std::vector<NameDecision>& decisions,
                          const ExistingConfig* existing, bool overwrite_human) {
  std::vector<std::string> out = existing ? existing->layout.head : default_head(relpath, labels);
  std::string tests_line = existing ? existing->layout.tests_line : "      tests:";
  std::string indent = existing ? existing->layout.item_indent : kDefaultItemIndent;

  std::vector<std::string> body;
  for (const auto& group : group_entries(decisions)) render_entry(group, indent, body);
  if (existing && !overwrite_human)
    for (const auto& e : existing->layout.entries)
      if (!e.generated) body.insert(body.end(), e.lines.begin(), e.lines.end());
  out.push_back(body.empty() ? tests_line + " []" : tests_line);
  out.insert(out.end(), body.begin(), body.end());
  if (existing) out.insert(out.end(), existing->layout.tail.begin(), existing->layout.tail.end());

  std::string text;
  for (const auto& line : out) text += line + "\n";
  return text;
}

std::string display_name(const NameDecision& d) {
  if (!d.restricted()) return d.name;
  return fmt::format("{} [{}]", d.name, fmt::join(d.dtypes_include, ", "));
}

ConfigDiff diff_decisions(const std::vector<NameDecision>& before,
                          const std::vector<NameDecision>& after) {
  std::map<std::string, const NameDecision*> old_names, new_names;
  for (const auto& d : before) old_names.emplace(display_name(d), &d);  // a repeat: the first
  for (const auto& d : after) new_names.emplace(display_name(d), &d);
  ConfigDiff diff;
  for (const auto& [name, d] : new_names) {
    auto it = old_names.find(name);
    if (it == old_names.end())
      diff.added.push_back({name, std::nullopt, *d});
    else if (!it->second->same_settings(*d))
      diff.changed.push_back({name, *it->second, *d});
  }
  for (const auto& [name, d] : old_names)
    if (!new_names.count(name)) diff.removed.push_back({name, *d, std::nullopt});
  return diff;
}

}  // namespace ootci
