#include "evidence/report_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/enum_names.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/html_escape.h"
#include "base/text.h"
#include "base/time.h"
#include "base/utf8.h"
#include "evidence/baseline.h"

namespace ootci {

namespace {

constexpr size_t kPageMessageChars = 600;   // of a failing test's message in the page
constexpr size_t kPageGroupKeyChars = 160;  // of the message line that groups errors
constexpr int kPageSlowest = 15;

// The dtypes in torch's order, so map columns read the same in every report; others follow.
const std::vector<std::string> kPageDtypeOrder = {
    "bool",     "uint8",   "int8",    "int16",     "int32",     "int64",     "float16",
    "bfloat16", "float32", "float64", "complex32", "complex64", "complex128"};

size_t dtype_rank(const std::string& dtype) {
  auto it = std::find(kPageDtypeOrder.begin(), kPageDtypeOrder.end(), dtype);
  return static_cast<size_t>(it - kPageDtypeOrder.begin());
}

// "relpath::Class::name" -> the node id pytest takes, with the path it was given.
std::string node_id(const ReportPage& r, const std::string& test_id) {
  std::string relpath = test_id.substr(0, test_id.find("::"));
  auto it = r.file_path.find(relpath);
  return (it == r.file_path.end() ? relpath : it->second) + test_id.substr(relpath.size());
}

// A message's first line, cut: what groups errors and sums one up.
std::string summary_line(const std::string& message) {
  return first_line(message, kPageGroupKeyChars);
}

constexpr EnumName<PageClass> kPageClassNames[] = {
    {PageClass::kPass, "pass"},
    {PageClass::kXfail, "xfail"},
    {PageClass::kSkip, "skip"},
    {PageClass::kFail, "fail"},
};

std::string seconds_text(double s) {
  return s >= 60 ? fmt::format("{:.1f} min", s / 60) : fmt::format("{:.2f} s", s);
}

struct Cell {
  std::map<PageClass, int> by_class;  // variants per class
  std::vector<const TestResult*> variants;
  // The colour: any failure shows, then xfail, then skip; pass only when all pass.
  std::string cls() const {
    for (PageClass c : {PageClass::kFail, PageClass::kXfail, PageClass::kSkip, PageClass::kPass})
      if (by_class.count(c)) return to_string(c);
    return "none";
  }
};

std::string cell_anchor(const std::string& op, const std::string& dtype) {
  std::string id = "v-" + op + "-" + dtype;
  for (char& c : id)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return id;
}

const char* kPageStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;padding:16px 24px;max-width:1280px;color:#1f2328;background:#f6f8fa}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:4px 7px;text-align:left;vertical-align:top}th{background:#f0f3f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.chip{display:inline-block;border-radius:10px;padding:2px 10px;font-weight:600}
.success{background:#dafbe1;color:#116329}.failure{background:#ffebe9;color:#a40e26}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:110px}
.card .label{font-size:12px;color:#57606a}.card .value{font-size:20px;font-weight:600}
pre{white-space:pre-wrap;word-break:break-all;background:#fff;border:1px solid #d0d7de;padding:8px;font-size:12px}
.map td{text-align:center;min-width:46px}.map a{color:inherit;text-decoration:none;display:block}
td.pass,li.pass{background:#dafbe1}td.fail,li.fail{background:#ffb3ad}td.xfail,li.xfail{background:#fff1a8}
td.skip,li.skip{background:#e6e9ed}td.none{background:#fff;color:#8c959f}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;font-size:12px;border:1px solid #d0d7de}
details{background:#fff;border:1px solid #d0d7de;margin:3px 0;padding:3px 8px;font-size:13px}
details ul{margin:4px 0;padding-left:18px}.muted{color:#57606a}
td{word-break:break-word}td.msg{width:40%}td.msg details{border:0;padding:0;margin:0}
)";

std::string counts_section(const ReportPage& r) {
  std::map<Outcome, int> by_outcome;
  for (const auto& t : r.results) ++by_outcome[t.outcome];
  std::string out = "<div class=\"cards\" id=\"counts\">";
  out += fmt::format(
      "<div class=\"card\"><div class=\"label\">variants</div><div class=\"value\" "
      "data-count=\"total\">{}</div></div>",
      r.results.size());
  for (Outcome o : kOutcomes)
    out += fmt::format(
        "<div class=\"card\"><div class=\"label\">{0}</div><div class=\"value\" "
        "data-count=\"{0}\">{1}</div></div>",
        to_string(o), by_outcome.count(o) ? by_outcome.at(o) : 0);
  out += fmt::format(
      "<div class=\"card\"><div class=\"label\">flaky</div><div class=\"value\" "
      "data-count=\"flaky\">{}</div></div></div>",
      r.verdict.flaky.size());
  // By mode: what the judge weighs.
  std::set<Outcome> outcomes;
  std::set<std::optional<TestMode>> modes;
  for (const auto& [k, n] : r.verdict.counts) {
    modes.insert(k.first);
    outcomes.insert(k.second);
  }
  out += "<table id=\"by-mode\"><tr><th>mode</th>";
  for (Outcome o : outcomes) out += "<th>" + esc(to_string(o)) + "</th>";
  out += "</tr>";
  for (const auto& m : modes) {
    out += "<tr><td>" + esc(m ? to_string(*m) : "(unlisted)") + "</td>";
    for (Outcome o : outcomes) {
      auto it = r.verdict.counts.find({m, o});
      out += fmt::format("<td class=\"n\">{}</td>", it == r.verdict.counts.end() ? 0 : it->second);
    }
    out += "</tr>";
  }
  out += "</table>";
  if (!r.verdict.reasons.empty()) {
    out += "<ul id=\"reasons\">";
    for (const auto& reason : r.verdict.reasons) out += "<li>" + esc(reason) + "</li>";
    out += "</ul>";
  }
  return out;
}

std::string json_text(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// A staged selection's second stage (wave 2), from the run's manifest; null when there is none.
// The manifest may come from another ootci (an ingested run), so every field is checked.
const nlohmann::json* second_stage(const ReportPage& r) {
  const nlohmann::json& m = r.run.manifest;
  if (!m.is_object() || !m.contains("second_stage")) return nullptr;
  const nlohmann::json& s = m["second_stage"];
  if (!s.is_object() || !s.contains("tests") || !s["tests"].is_array()) return nullptr;
  return &s;
}

std::set<std::string> wave2_tests(const ReportPage& r) {
  std::set<std::string> out;
  if (const nlohmann::json* s = second_stage(r))
    for (const auto& t : (*s)["tests"])
      if (t.is_string()) out.insert(t.get<std::string>());
  return out;
}

std::string failing_section(const ReportPage& r) {
  std::string out = "<h2>Failing tests</h2>";
  if (!r.verdict.compared_to_green)
    out +=
        "<p class=\"muted\">No earlier green run of this backend and config to compare "
        "with: \"new\" is not known.</p>";
  else
    out += fmt::format("<p class=\"muted\">Compared with the last green run {}.</p>",
                       esc(r.last_green ? r.last_green->id : ""));
  if (r.verdict.failing.empty()) return out + "<p id=\"failing\">None.</p>";
  // A staged run says which wave found each failing test.
  bool staged = second_stage(r) != nullptr;
  std::set<std::string> wave2 = wave2_tests(r);
  out += fmt::format(
      "<table id=\"failing\"><tr><th>test</th>{}<th>new</th><th>mode</th><th>outcome</th>"
      "<th>error</th><th>message</th></tr>",
      staged ? "<th>wave</th>" : "");
  for (const auto& f : r.verdict.failing) {
    int wave = wave2.count(f.test_id) ? 2 : 1;
    out += fmt::format(
        "<tr class=\"{}\"{}><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"msg\"><details><summary>{}</summary><pre>{}</pre></details></td></tr>",
        f.newly ? "newly" : "known", staged ? fmt::format(" data-wave=\"{}\"", wave) : "",
        esc(f.test_id), staged ? fmt::format("<td class=\"n\">{}</td>", wave) : "",
        f.newly ? "new" : "", esc(mode_text(f.mode)), esc(to_string(f.outcome)), esc(f.error_class),
        esc(summary_line(f.message)), esc(truncate_utf8_chars(f.message, kPageMessageChars)));
  }
  return out + "</table>";
}

// Wave 2 apart: whether it ran and why, and what each of its tests did. Its tests reached the
// change only while generating their inputs (docs/select.md, "Staged selection").
std::string wave2_section(const ReportPage& r) {
  const nlohmann::json* stage = second_stage(r);
  if (!stage) return "";
  std::set<std::string> tests = wave2_tests(r);
  std::string why = json_text(*stage, "why");
  bool ran = stage->value("ran", false);
  std::string out = "<h2>Wave 2: tests reached only through input generation</h2>";
  std::string what = ran                      ? "ran because wave 1 raised: " + esc(why)
                     : stage->contains("ran") ? "did not run: " + esc(why)
                                              : std::string("is not decided yet");
  out += fmt::format("<p id=\"wave2-why\" data-ran=\"{}\">Wave 2 ({} test{}) {}.</p>",
                     ran ? "true" : "false", tests.size(), tests.size() == 1 ? "" : "s", what);
  std::vector<const TestResult*> rows;
  for (const auto& t : r.results)
    if (tests.count(t.test_id)) rows.push_back(&t);
  // Failures first: what wave 2 found.
  std::stable_sort(rows.begin(), rows.end(), [](const TestResult* a, const TestResult* b) {
    return is_failure(a->outcome) && !is_failure(b->outcome);
  });
  if (rows.empty()) return out + "<p id=\"wave2\" class=\"muted\">No wave-2 results.</p>";
  size_t failing = 0;
  for (const auto* t : rows) failing += is_failure(t->outcome);
  out += fmt::format("<p class=\"muted\">{} of its {} results fail.</p>", failing, rows.size());
  out += "<table id=\"wave2\"><tr><th>test</th><th>outcome</th><th>error</th><th>time</th></tr>";
  for (const auto* t : rows)
    out += fmt::format(
        "<tr class=\"{}\" data-outcome=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td "
        "class=\"n\">{}</td></tr>",
        to_string(outcome_class(t->outcome)), esc(to_string(t->outcome)), esc(t->test_id),
        esc(to_string(t->outcome)), esc(t->error_class), seconds_text(t->duration_s));
  return out + "</table>";
}

std::string flaky_section(const ReportPage& r) {
  std::string out = "<h2>Flaky tests</h2>";
  if (r.verdict.flaky.empty()) return out + "<p id=\"flaky\">None.</p>";
  out += "<ul id=\"flaky\">";
  for (const auto& id : r.verdict.flaky) out += "<li>" + esc(id) + "</li>";
  return out + "</ul>";
}

std::string errors_section(const ReportPage& r) {
  struct Group {
    int count = 0;
    std::vector<std::string> tests;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& t : r.results) {
    if (!is_failure(t.outcome)) continue;
    Group& g = groups[{t.error_class, summary_line(t.message)}];
    ++g.count;
    if (g.tests.size() < 5) g.tests.push_back(t.test_id);
  }
  std::string out = "<h2>Errors by message</h2>";
  if (groups.empty()) return out + "<p id=\"errors\">None.</p>";
  std::vector<std::pair<std::pair<std::string, std::string>, Group>> sorted(groups.begin(),
                                                                            groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  out +=
      "<table id=\"errors\"><tr><th>tests</th><th>error</th><th>message</th><th>for "
      "example</th></tr>";
  for (const auto& [key, g] : sorted)
    out += fmt::format(
        "<tr><td class=\"n\">{}</td><td>{}</td><td><pre>{}</pre></td><td>{}</td></tr>", g.count,
        esc(key.first), esc(key.second), esc(fmt::format("{}", fmt::join(g.tests, "\n"))));
  return out + "</table>";
}

// A new device's first question of a red run: how much is missing, how much is wrong, and what
// crashes or hangs. Each cause with its count, the ops it hits most and a few of its tests.
std::string causes_section(const ReportPage& r) {
  struct Group {
    int count = 0;
    std::map<std::string, int> ops;
    std::vector<std::string> tests;
  };
  std::map<FailureCause, Group> groups;
  for (const auto& t : r.results) {
    std::optional<FailureCause> cause = failure_cause(t);
    if (!cause) continue;
    Group& g = groups[*cause];
    ++g.count;
    if (!t.op.empty()) ++g.ops[t.op];
    if (g.tests.size() < 5) g.tests.push_back(t.test_id);
  }
  std::string out = "<h2>Failures by cause</h2>";
  if (groups.empty()) return out + "<p id=\"causes\">None.</p>";
  out +=
      "<table id=\"causes\"><tr><th>cause</th><th>tests</th><th>ops hit most</th><th>for "
      "example</th></tr>";
  for (const auto& [cause, g] : groups) {
    std::vector<std::pair<std::string, int>> ops(g.ops.begin(), g.ops.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string top;
    for (size_t i = 0; i < ops.size() && i < 5; ++i)
      top += fmt::format("{}{} ({})", i ? ", " : "", ops[i].first, ops[i].second);
    out += fmt::format(
        "<tr data-cause=\"{0}\"><td>{0}</td><td class=\"n\">{1}</td><td>{2}</td><td><pre>{3}"
        "</pre></td></tr>",
        esc(to_string(cause)), g.count, esc(top.empty() ? "-" : top),
        esc(fmt::format("{}", fmt::join(g.tests, "\n"))));
  }
  return out + "</table>";
}

std::string slowest_section(const ReportPage& r) {
  std::map<std::string, double> files;
  for (const auto& t : r.results) files[t.file] += t.duration_s;
  std::vector<std::pair<std::string, double>> f(files.begin(), files.end());
  std::sort(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<const TestResult*> tests;
  for (const auto& t : r.results) tests.push_back(&t);
  size_t n = std::min<size_t>(kPageSlowest, tests.size());
  std::partial_sort(tests.begin(), tests.begin() + static_cast<long>(n), tests.end(),
                    [](const auto* a, const auto* b) { return a->duration_s > b->duration_s; });
  std::string out =
      "<h2>Where the time goes</h2><table id=\"slowest-files\"><tr><th>file</th>"
      "<th>test time</th></tr>";
  for (size_t i = 0; i < f.size() && i < static_cast<size_t>(kPageSlowest); ++i)
    out += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>", esc(f[i].first),
                       seconds_text(f[i].second));
  out += "</table><table id=\"slowest-tests\"><tr><th>test</th><th>outcome</th><th>time</th></tr>";
  for (size_t i = 0; i < n; ++i)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                       esc(tests[i]->test_id), esc(to_string(tests[i]->outcome)),
                       seconds_text(tests[i]->duration_s));
  return out + "</table>";
}

std::string map_section(const std::vector<TestResult>& results) {
  std::map<std::string, std::map<std::string, Cell>> cells;  // op -> dtype -> cell
  std::set<std::string> dtype_set;
  for (const auto& t : results) {
    if (t.op.empty()) continue;
    std::string dtype = t.dtype.empty() ? "(none)" : t.dtype;
    Cell& c = cells[t.op][dtype];
    ++c.by_class[outcome_class(t.outcome)];
    c.variants.push_back(&t);
    dtype_set.insert(dtype);
  }
  std::string out = "<h2>Ops &times; dtypes</h2>";
  if (cells.empty())
    return out + "<p id=\"op-dtype-map\">No variant of this run names an op (OpInfo tests).</p>";
  std::vector<std::string> dtypes(dtype_set.begin(), dtype_set.end());
  std::stable_sort(dtypes.begin(), dtypes.end(),
                   [](const auto& a, const auto& b) { return dtype_rank(a) < dtype_rank(b); });
  out +=
      "<p class=\"legend\"><span class=\"pass\" style=\"background:#dafbe1\">pass</span>"
      "<span style=\"background:#fff1a8\">xfail</span><span style=\"background:#e6e9ed\">skip"
      "</span><span style=\"background:#ffb3ad\">fail</span><span>not covered</span> A cell "
      "shows its worst outcome and the number of variants; it links to them.</p>";
  out += "<table class=\"map\" id=\"op-dtype-map\"><tr><th>op</th>";
  for (const auto& d : dtypes) out += "<th>" + esc(d) + "</th>";
  out += "</tr>";
  std::string lists;
  for (const auto& [op, row] : cells) {
    out += "<tr><th>" + esc(op) + "</th>";
    for (const auto& d : dtypes) {
      auto it = row.find(d);
      if (it == row.end()) {
        out += fmt::format("<td class=\"none\" data-op=\"{}\" data-dtype=\"{}\">&ndash;</td>",
                           esc(op), esc(d));
        continue;
      }
      const Cell& c = it->second;
      std::string title;
      for (const auto& [cls, n] : c.by_class) title += fmt::format("{} {}, ", n, to_string(cls));
      title.resize(title.size() - 2);
      std::string anchor = cell_anchor(op, d);
      out += fmt::format(
          "<td class=\"{0}\" data-op=\"{1}\" data-dtype=\"{2}\" title=\"{3}\"><a "
          "href=\"#{4}\">{5}</a></td>",
          c.cls(), esc(op), esc(d), esc(title), anchor, c.variants.size());
      lists += fmt::format("<details id=\"{}\"><summary>{} {}: {}</summary><ul>", anchor, esc(op),
                           esc(d), esc(title));
      for (const TestResult* t : c.variants)
        lists +=
            fmt::format("<li class=\"{}\">{} &mdash; {}</li>", to_string(outcome_class(t->outcome)),
                        esc(t->test_id), esc(to_string(t->outcome)));
      lists += "</ul></details>";
    }
    out += "</tr>";
  }
  return out + "</table><div id=\"map-variants\">" + lists + "</div>";
}

// One bar per run, stacked by outcome class, the newest on the right.
std::string trend_svg(const std::vector<TrendPoint>& points) {
  const int bar = 10, gap = 3, height = 28;
  int max_total = 1;
  for (const auto& p : points) {
    int total = 0;
    for (const auto& [o, n] : p.outcomes.counts) total += n;
    max_total = std::max(max_total, total);
  }
  int width = static_cast<int>(points.size()) * (bar + gap);
  std::string out = fmt::format(
      "<svg class=\"trend\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\">",
      width, height);
  static const std::map<PageClass, std::string> colour = {{PageClass::kPass, "#2da44e"},
                                                          {PageClass::kFail, "#cf222e"},
                                                          {PageClass::kXfail, "#d4a72c"},
                                                          {PageClass::kSkip, "#afb8c1"}};
  for (size_t i = 0; i < points.size(); ++i) {
    std::map<PageClass, int> by_class;
    for (const auto& [o, n] : points[i].outcomes.counts) by_class[outcome_class(o)] += n;
    double y = height;
    std::string title = points[i].run_id + ":";
    for (const auto& [cls, text] : kPageClassNames) {
      auto it = by_class.find(cls);
      if (it == by_class.end()) continue;
      double h = static_cast<double>(it->second) * height / max_total;
      y -= h;
      out += fmt::format(
          "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\" "
          "data-class=\"{}\" data-count=\"{}\"/>",
          static_cast<int>(i) * (bar + gap), y, bar, h, colour.at(cls), text, it->second);
      title += fmt::format(" {} {}", it->second, text);
    }
    out += "<title>" + esc(title) + "</title>";
  }
  return out + "</svg>";
}

std::string files_section(const ReportPage& r) {
  std::map<std::string, std::map<Outcome, int>> counts;
  std::map<std::string, double> seconds;
  for (const auto& t : r.results) {
    ++counts[t.file][t.outcome];
    seconds[t.file] += t.duration_s;
  }
  std::string out = "<h2>Upstream files</h2><table id=\"files\"><tr><th>file</th>";
  for (Outcome o : kOutcomes) out += "<th>" + to_string(o) + "</th>";
  out += "<th>time</th><th>last runs</th></tr>";
  for (const auto& [file, c] : counts) {
    out += "<tr data-file=\"" + esc(file) + "\"><td>" + esc(file) + "</td>";
    for (Outcome o : kOutcomes)
      out += fmt::format("<td class=\"n\" data-outcome=\"{}\">{}</td>", to_string(o),
                         c.count(o) ? c.at(o) : 0);
    auto trend = r.trend.find(file);
    out += fmt::format("<td class=\"n\">{}</td><td>{}</td></tr>", seconds_text(seconds[file]),
                       trend == r.trend.end() ? "" : trend_svg(trend->second));
  }
  return out + "</table>";
}

std::string triage_section(const ReportPage& r) {
  if (r.triage.is_null()) return "";
  std::string out = "<h2>Attribution</h2><div id=\"triage\">";
  out += fmt::format("<p>Category: <b data-triage=\"category\">{}</b></p>",
                     esc(json_text(r.triage, "category")));
  std::string summary = json_text(r.triage, "summary");
  if (!summary.empty()) out += "<p>" + esc(summary) + "</p>";
  out += "<pre>" + esc(r.triage.dump(2)) + "</pre></div>";
  return out;
}

std::string reproduce_section(const ReportPage& r) {
  std::string out = "<h2>Reproduce a failing test</h2>";
  const FailingTest* first = r.verdict.failing.empty() ? nullptr : &r.verdict.failing.front();
  if (!first || r.python.empty())
    return out +
           "<p class=\"muted\">Nothing to reproduce (no failing test, or the run's "
           "configuration was not given).</p>";
  std::string cmd;
  if (!r.reproduce_dir.empty()) cmd += "cd " + shell_quote(r.reproduce_dir) + "\n";
  cmd += "env";
  for (const auto& [k, v] : r.reproduce_env) cmd += " \\\n  " + k + "=" + shell_quote(v);
  cmd += " \\\n ";
  for (const auto& word : r.python) cmd += " " + shell_quote(word);
  cmd += " -m pytest -p no:cacheprovider " + shell_quote(node_id(r, first->test_id));
  out +=
      "<p>The plan's environment and the pytest command the run used, for the first failing "
      "test; put another test's id in its place.</p><pre id=\"reproduce\">" +
      esc(cmd) + "</pre>";
  return out;
}

// What the last `select propose` or `select rebucket` changed (or proposed), name by name.
std::string bucket_changes_section(const nlohmann::json& record) {
  std::string out = "<h2>Last bucket changes</h2>";
  if (record.is_null())
    return out +
           "<p class=\"muted\" id=\"bucket-changes\">No <code>ootci select propose</code> "
           "or <code>select rebucket</code> recorded in this workspace.</p>";
  bool written = record.value("written", false);
  out +=
      fmt::format("<p>ootci select {} at {}: {} change(s), {}.</p>",
                  esc(json_text(record, "command")), esc(json_text(record, "at")),
                  record["changes"].size(), written ? "written to the configs" : "proposed only");
  out +=
      "<table id=\"bucket-changes\"><tr><th>file</th><th>entry</th><th>from</th><th>to</th>"
      "<th>reason</th></tr>";
  for (const auto& c : record["changes"]) {
    if (!c.is_object()) continue;
    std::string from = json_text(c, "from"), to = json_text(c, "to");
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       esc(json_text(c, "file")), esc(json_text(c, "name")),
                       from.empty() ? "(new)" : esc(from), to.empty() ? "(removed)" : esc(to),
                       esc(json_text(c, "reason")));
  }
  return out + "</table>";
}

std::string page_frame(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><title>{}</title>"
      "<style>{}</style></head><body>{}</body></html>\n",
      kPagePolicy, esc(title), kPageStyle, body);
}

}  // namespace

PageClass outcome_class(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed:
    case Outcome::kXpassed:
      return PageClass::kPass;
    case Outcome::kXfailed:
      return PageClass::kXfail;
    case Outcome::kSkipped:
      return PageClass::kSkip;
    case Outcome::kFailed:
    case Outcome::kError:
      return PageClass::kFail;
  }
  return PageClass::kFail;
}

std::string to_string(PageClass page_class) {
  return std::string(enum_text(kPageClassNames, page_class));
}

ReportPage gather_report_page(EvidenceStore& store, const std::string& run_id,
                              const std::string& run_dir, int trend_runs) {
  std::optional<RunInfo> run = store.run(run_id);
  if (!run) throw Error(fmt::format("no run {} in the evidence store", run_id));
  return gather_report_page(store, *run, store.results(run_id), run_dir, trend_runs);
}

ReportPage gather_report_page(EvidenceStore& store, const RunInfo& run,
                              std::vector<TestResult> results, const std::string& run_dir,
                              int trend_runs) {
  ReportPage r;
  r.run = run;
  r.results = std::move(results);
  Baseline green = baseline_of(store, r.run);
  r.last_green = green.run;
  r.verdict = judge(r.results, green.results_or_null());

  // History: this run and the ones of the same backend that started before it.
  std::vector<RunInfo> earlier;
  for (const auto& other : store.runs(r.run.backend)) {
    if (static_cast<int>(earlier.size()) >= trend_runs) break;
    if (other.started_ms < r.run.started_ms ||
        (other.started_ms == r.run.started_ms && other.id <= r.run.id))
      earlier.push_back(other);
  }
  std::set<std::string> files;
  for (const auto& t : r.results) files.insert(t.file);
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
    std::map<std::string, FileOutcomes> per_file = store.file_outcomes(it->id);
    for (const auto& f : files)
      r.trend[f].push_back(
          {it->id, it->started_ms, per_file.count(f) ? per_file[f] : FileOutcomes{}});
  }

  if (!run_dir.empty()) {
    std::string triage = read_file_or_empty(run_dir + "/triage_verdict.json");
    if (!triage.empty()) r.triage = nlohmann::json::parse(triage, nullptr, false);
    if (r.triage.is_discarded()) r.triage = nullptr;
    nlohmann::json plan =
        nlohmann::json::parse(read_file_or_empty(run_dir + "/plan.json"), nullptr, false);
    if (plan.is_object() && plan.contains("files") && plan["files"].is_array())
      for (const auto& f : plan["files"])
        if (f.is_object() && f.value("relpath", nlohmann::json()).is_string() &&
            f.value("path", nlohmann::json()).is_string())  // the page reads a run it did not write
          r.file_path[f["relpath"].get<std::string>()] = f["path"].get<std::string>();
  }
  return r;
}

std::string render_report_page(const ReportPage& r) {
  // An interrupted or running run has no verdict: one on part of a run would mislead.
  std::string verdict = r.run.verdict ? to_string(*r.run.verdict) : to_string(r.run.status);
  std::string body = fmt::format(
      "<h1>ootci run {}</h1><p><span class=\"chip {}\" id=\"verdict\">{}</span> backend <b>{}</b>"
      " &middot; {} &middot; started {} &middot; {}</p>",
      esc(r.run.id), r.run.verdict == Conclusion::kSuccess ? "success" : "failure", esc(verdict),
      esc(r.run.backend), esc(to_string(r.run.status)), esc(iso8601_utc(r.run.started_ms)),
      r.run.ended_ms ? "took " + seconds_text((r.run.ended_ms - r.run.started_ms) / 1000.0)
                     : "not finished");
  body += counts_section(r);
  body += failing_section(r);
  body += wave2_section(r);
  body += flaky_section(r);
  body += causes_section(r);
  body += errors_section(r);
  body += map_section(r.results);
  body += files_section(r);
  body += slowest_section(r);
  body += triage_section(r);
  body += reproduce_section(r);
  body += "<h2>Manifest</h2><pre id=\"manifest\">" + esc(r.run.manifest.dump(2)) + "</pre>";
  return page_frame("ootci run " + r.run.id, body);
}

DevicePage gather_device_page(EvidenceStore& store, const std::string& backend, int max_runs) {
  DevicePage d;
  d.backend = backend;
  std::map<std::string, std::set<std::string>> files_of_run;
  int scanned = 0;
  for (const auto& run : store.runs(backend)) {
    if (run.status == RunStatus::kRunning) continue;
    if (++scanned > max_runs) break;
    for (const auto& [file, outcomes] : store.file_outcomes(run.id))
      if (d.run_of_file.emplace(file, run.id).second) files_of_run[run.id].insert(file);
  }
  for (const auto& [run_id, files] : files_of_run)
    for (auto& t : store.results(run_id))
      if (files.count(t.file)) d.results.push_back(std::move(t));
  return d;
}

std::string render_device_page(const DevicePage& d) {
  std::map<std::string, std::map<PageClass, int>> counts;
  for (const auto& t : d.results) ++counts[t.file][outcome_class(t.outcome)];
  std::string body = fmt::format(
      "<h1>ootci device: {}</h1><p class=\"muted\">The latest finished run of every upstream "
      "file: {} variants in {} files.</p>",
      esc(d.backend), d.results.size(), d.run_of_file.size());
  body += map_section(d.results);
  body +=
      "<h2>Upstream files</h2><table id=\"files\"><tr><th>file</th><th>latest run</th>"
      "<th>pass</th><th>xfail</th><th>skip</th><th>fail</th></tr>";
  for (const auto& [file, run_id] : d.run_of_file) {
    body += "<tr data-file=\"" + esc(file) + "\"><td>" + esc(file) + "</td><td>" + esc(run_id) +
            "</td>";
    for (const auto& [cls, text] : kPageClassNames)
      body += fmt::format("<td class=\"n\">{}</td>", counts[file][cls]);
    body += "</tr>";
  }
  body += "</table>";
  body += bucket_changes_section(d.bucket_changes);
  return page_frame("ootci device " + d.backend, body);
}

void add_bucket_changes(DevicePage& page, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(read_file_or_empty(path), nullptr, false);
  if (j.is_object() && j.contains("changes") && j["changes"].is_array()) page.bucket_changes = j;
}

}  // namespace ootci
