#include "hud/hud_pages.h"

#include <fmt/format.h>

#include "base/text.h"
#include "base/time.h"
#include "hud/html.h"
#include "hud/svg_chart.h"
#include "relay_store/records.h"

namespace ootci {
namespace {

// Numbers print the way the API holds them: integers plainly, rounded values with one decimal.
std::string num(const nlohmann::json& v, const char* suffix = "") {
  if (v.is_null()) return "–";
  if (v.is_number_integer()) return fmt::format("{}{}", v.get<int64_t>(), suffix);
  return fmt::format("{:.1f}{}", v.get<double>(), suffix);
}

std::string cell(const std::string& key, const nlohmann::json& v, const char* suffix = "") {
  return fmt::format(R"(<span data-key="{}">{}</span>)", esc(key), esc(num(v, suffix)));
}

std::string card(const std::string& label, const std::string& key, const nlohmann::json& v,
                 const char* suffix = "") {
  return fmt::format(
      R"(<div class="card"><div class="label">{}</div><div class="value">{}</div></div>)",
      esc(label), cell(key, v, suffix));
}

std::string tabs(const std::string& base, const std::string& name,
                 const std::vector<std::string>& values, const std::string& current,
                 const std::string& keep) {
  std::string out = "<span class=\"tabs\">";
  for (const auto& v : values)
    out += fmt::format(R"(<a class="{}" href="{}?{}={}{}">{}</a>)", v == current ? "on" : "",
                       esc(base), name, url_encode(v), esc(keep), esc(v));
  return out + "</span>";
}

// A job of the HUD's JSON as the pages show it: its conclusion once completed, else its status.
std::string outcome(const nlohmann::json& job) {
  std::string status = job.value("status", "");
  JobConclusion conclusion = JobConclusion::parse(job.value("conclusion", ""));
  bool completed = parse_job_status(status) == JobStatus::kCompleted;
  const std::string& text = completed ? conclusion.text() : status;
  const char* cls = conclusion == JobConclusion::kSuccess ? "pass" : completed ? "fail" : "";
  return fmt::format(R"(<span class="{}">{}</span>)", cls, esc(text.empty() ? "unknown" : text));
}

std::string repo_link(const std::string& repo) {
  return fmt::format(R"(<a href="/crcr/{}">{}</a>)", esc(repo), esc(repo));
}

// ootci names its analyzer; upstream CRCR's schema makes it an object ({name, version, ...}).
std::string analyzer_text(const nlohmann::json& verdict) {
  auto a = verdict.find("analyzer");
  if (a == verdict.end() || a->is_null()) return "";
  if (a->is_string()) return a->get<std::string>();
  if (a->is_object() && a->contains("name") && (*a)["name"].is_string()) {
    std::string out = (*a)["name"].get<std::string>();
    if (a->contains("version") && (*a)["version"].is_string())
      out += " " + (*a)["version"].get<std::string>();
    return out;
  }
  return a->dump();
}

// Where retention has pruned job rows: aggregates reach further back through the rollups, job
// detail does not.
std::string detail_note(const nlohmann::json& doc) {
  int64_t since = doc.value("detail_since_ms", int64_t{0});
  if (since <= 0) return "";
  std::string when = iso8601_utc(since);
  return fmt::format(
      R"(<p class="note" id="detail-since" data-ms="{}">Job detail begins {}: older job rows were )"
      R"(pruned by retention. Totals that reach further back come from the hourly rollups.</p>)",
      since, esc(when));
}

// One tbody per repo, a row per criterion: the API's level-status rows as they stand.
std::string level_status_table(const nlohmann::json& repos) {
  std::string out =
      "<table id=\"level-status\"><thead><tr><th>Backend</th><th>Level</th><th>Change</th>"
      "<th>Window</th><th>Criterion</th><th>Measured</th><th>Target</th><th>Met</th></tr></thead>";
  for (const auto& r : repos) {
    std::string repo = r["repo"],
                change = r["change"].is_string() ? r["change"].get<std::string>() : "";
    std::string change_cell =
        change.empty() ? (r["noData"] == true ? "none (no jobs)" : "none") : change;
    if (r["demotionPr"].is_object())
      change_cell += fmt::format(" · PR #{} open", r["demotionPr"]["number"].get<int64_t>());
    out += fmt::format(R"(<tbody data-repo="{}" data-change="{}">)", esc(repo), esc(change));
    bool first = true;
    for (const auto& c : r["criteria"]) {
      std::string met = c["met"].is_null() ? "no data" : c["met"] == true ? "met" : "missed";
      out += fmt::format(
          R"(<tr data-criterion="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-key="measured">{}</td><td>{}</td><td class="{}" data-met="{}">{}</td></tr>)",
          esc(c["criterion"].get<std::string>()), first ? repo_link(repo) : "",
          first ? esc(r["level"].get<std::string>()) : "", first ? esc(change_cell) : "",
          first ? fmt::format("{} days", r["windowDays"].get<int>()) : "",
          esc(c["criterion"].get<std::string>()), esc(c["measured"].get<std::string>()),
          esc(c["target"].get<std::string>()),
          c["met"].is_null() ? "muted"
          : c["met"] == true ? "pass"
                             : "fail",
          c["met"].is_null() ? "null"
          : c["met"] == true ? "true"
                             : "false",
          met);
      first = false;
    }
    out += "</tbody>";
  }
  return out + "</table>";
}

// Why an L3 backend gets no new check runs: its demotion PR is open.
std::string demotion_banner(const nlohmann::json& status) {
  if (!status.is_object() || !status["demotionPr"].is_object()) return "";
  const auto& pr = status["demotionPr"];
  int64_t n = pr["number"];
  std::string url = pr["url"];
  return fmt::format(
      R"(<div class="banner" id="demotion-banner" data-pr="{}">Check runs are off: demotion PR )"
      R"({} has been open since {}. While it is open the relay creates no new check runs for )"
      R"(this backend on upstream PRs (jobs that started before it still get theirs finished); )"
      R"(they resume when it closes.</div>)",
      n,
      url.empty() ? fmt::format("#{}", n)
                  : fmt::format(R"(<a href="{}">#{}</a>)", safe_href(url), n),
      esc(iso8601_utc(pr["sinceMs"].get<int64_t>())));
}

std::string verdict_text(const nlohmann::json& job) {
  const auto& v = job["verdict"];
  if (!v.is_object()) return "";
  return fmt::format("{} ({})", v["category"].get<std::string>(),
                     v["confidence"].get<std::string>());
}

}  // namespace

std::string error_page(int status, const std::string& message) {
  return html_page("Error", fmt::format("<h1>{}</h1><p>{}</p>", status, esc(message)));
}

std::string summary_page(const nlohmann::json& s) {
  std::string range = s["range"], tab = s["tab"];
  std::string body = "<h1>Cross-Repository CI Relay</h1><p>";
  body += tabs("/crcr", "tab", {"pr", "nightly"}, tab, "&amp;range=" + url_encode(range)) + " ";
  body +=
      tabs("/crcr", "range", {"24h", "7d", "30d"}, range, "&amp;tab=" + url_encode(tab)) + "</p>";
  const auto& h = s["health"];
  body += "<h2>Relay health</h2><div class=\"cards\" id=\"health\">";
  body += card("Dispatch backlog", "outbox_pending", h.value("outbox_pending", nlohmann::json()));
  body += card("Failed deliveries", "outbox_failed", h.value("outbox_failed", nlohmann::json()));
  body += card("Sweeper last run (s ago)", "sweeper_last_run_age_s",
               h.value("sweeper_last_run_age_s", nlohmann::json()));
  body += fmt::format(
      R"(<div class="card"><div class="label">Sweeper</div><div class="value"><span class="chip {}" data-key="sweeper_ok">{}</span></div></div></div>)",
      h.value("sweeper_ok", false) ? "green" : "red",
      h.value("sweeper_ok", false) ? "healthy" : "stuck");
  for (const auto& sec : s["sections"]) {
    std::string level = sec["level"];
    body += fmt::format(R"(<h2 id="{}">{} — {}</h2>)", esc(level), esc(level),
                        esc(sec["title"].get<std::string>()));
    if (sec["backends"].empty()) {
      body += "<p>No backends.</p>";
      continue;
    }
    if (level == "L1") {  // webhook-only: no callbacks, so no metrics
      body += "<ul>";
      for (const auto& b : sec["backends"])
        body += fmt::format(R"(<li data-repo="{}">{}</li>)", esc(b["repo"].get<std::string>()),
                            repo_link(b["repo"]));
      body += "</ul>";
      continue;
    }
    body +=
        "<table><tr><th>Backend</th><th>Pass rate</th><th>Without upstream-caused</th>"
        "<th>Jobs</th><th>Failures</th><th>Timed out</th><th>Avg queue</th>"
        "<th>Avg execution</th></tr>";
    for (const auto& b : sec["backends"]) {
      body += fmt::format(
          R"(<tr data-repo="{}"><td>{}</td><td><span class="chip {}">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)",
          esc(b["repo"].get<std::string>()), repo_link(b["repo"]),
          esc(b["chip"].get<std::string>()), cell("pass_rate", b["pass_rate"], "%"),
          cell("pass_rate_excluding_upstream", b["pass_rate_excluding_upstream"], "%"),
          cell("jobs", b["jobs"]), cell("failures", b["failures"]),
          cell("timed_out", b["timed_out"]), cell("avg_queue_min", b["avg_queue_min"], " min"),
          cell("avg_exec_min", b["avg_exec_min"], " min"));
    }
    body += "</table>";
  }
  body += "<h2 id=\"levels\">Level status</h2>";
  body +=
      "<p class=\"muted\">Promotion of L2 backends to L3 and demotion of L3 backends to L2, on "
      "fixed windows (<a href=\"/api/crcr/level-status\">/api/crcr/level-status</a>).</p>";
  body += s["level_status"].empty() ? "<p>No L2 or L3 backends.</p>"
                                    : level_status_table(s["level_status"]);
  body += "<h2 id=\"nightly\">Nightly freshness</h2>";
  if (s["nightly_freshness"].empty())
    body += "<p>No backend reports nightly runs.</p>";
  else {
    body +=
        "<table id=\"nightly-freshness\"><tr><th>Backend</th><th>Newest nightly</th>"
        "<th>Age</th><th></th></tr>";
    for (const auto& f : s["nightly_freshness"])
      body += fmt::format(
          R"(<tr data-nightly-repo="{}"><td>{}</td><td>{}</td><td>{}</td><td><span class="chip {}" data-key="stale">{}</span></td></tr>)",
          esc(f["repo"].get<std::string>()), repo_link(f["repo"]),
          f["last_ms"].is_null() ? "never" : esc(iso8601_utc(f["last_ms"].get<int64_t>())),
          cell("age_h", f["age_h"], " h"), f["stale"] == true ? "red" : "green",
          f["stale"] == true ? "degraded" : "healthy");
    body += "</table>";
  }
  return html_page("CRCR", body + detail_note(s));
}

namespace {

// The repo page's statistics cards.
std::string stats_cards(const nlohmann::json& st) {
  std::string body = "<div class=\"cards\" id=\"stats\">";
  body += fmt::format(
      R"(<div class="card"><div class="label">Pass rate</div><div class="value"><span class="chip {}">{}</span></div></div>)",
      esc(st["chip"].get<std::string>()), cell("pass_rate", st["pass_rate"], "%"));
  body += card("Pass rate without upstream-caused failures", "pass_rate_excluding_upstream",
               st["pass_rate_excluding_upstream"], "%");
  body += card("Upstream-caused failures", "upstream_failures", st["upstream_failures"]);
  body += card("Total PRs", "prs", st["prs"]);
  body += card("Failures", "failures", st["failures"]);
  body += card("Timed out", "timed_out", st["timed_out"]);
  body += card("Avg queue time", "avg_queue_min", st["avg_queue_min"], " min");
  body += card("Avg execution time", "avg_exec_min", st["avg_exec_min"], " min");
  body += card("Timeout rate", "timeout_rate", st["timeout_rate"], "%");
  body += card("End-to-end P50", "e2e_p50_min", st["e2e_p50_min"], " min");
  body += card("End-to-end P95", "e2e_p95_min", st["e2e_p95_min"], " min");
  body += card("Overrun rate (> 3 h)", "overrun_rate", st["overrun_rate"], "%");
  return body + "</div>";
}

// The readiness criteria for the next level, and the level check when the repo has one.
std::string readiness_section(const nlohmann::json& rd, const nlohmann::json& level_status) {
  std::string body = fmt::format(
      R"(<h2>{} <span class="chip {}" data-key="ready">{}</span></h2>)",
      rd["target"].is_string() ? esc(rd["target"].get<std::string>()) + " readiness" : "Readiness",
      rd["ready"] == true ? "green" : "red", rd["ready"] == true ? "ready" : "not yet");
  if (!rd["note"].get<std::string>().empty())
    body += fmt::format(R"(<p class="note" id="readiness-note">{}</p>)",
                        esc(rd["note"].get<std::string>()));
  body += "<table id=\"readiness\"><tr><th>Criterion</th><th>Target</th><th>Now</th><th></th></tr>";
  for (const auto& c : rd["criteria"])
    body += fmt::format(
        R"(<tr><td>{}</td><td>{}</td><td>{}</td><td class="{}" data-pass="{}">{}</td></tr>)",
        esc(c["name"].get<std::string>()), esc(c["target"].get<std::string>()),
        esc(c["display"].get<std::string>()), c["pass"] == true ? "pass" : "fail",
        c["pass"] == true ? "true" : "false", c["pass"] == true ? "pass" : "fail");
  body += "</table>";
  if (level_status.is_object()) {
    const auto& ls = level_status;
    body +=
        fmt::format(R"(<h2>{} <span class="chip {}" data-key="change">{}</span></h2>)",
                    ls["level"] == "L3" ? "L3 demotion check" : "L3 promotion check",
                    ls["change"].is_null()     ? "grey"
                    : ls["change"] == "demote" ? "red"
                                               : "green",
                    ls["change"].is_null() ? "no change" : esc(ls["change"].get<std::string>()));
    body += level_status_table(nlohmann::json::array({ls}));
  }
  return body;
}

// A job's result, linked to its log when it has one, and to its details.
std::string job_link(const nlohmann::json& j) {
  std::string out = outcome(j);
  if (!j["url"].get<std::string>().empty())
    out = fmt::format(R"(<a href="{}">{}</a>)", safe_href(j["url"].get<std::string>()), out);
  return out + fmt::format(R"( <a class="detail" href="/crcr/job?key={}">details</a>)",
                           url_encode(j["key"].get<std::string>()));
}

// The pages of a repo page's table; `keep` is the query the links carry along.
std::string pager(const nlohmann::json& p, const std::string& base, const std::string& keep) {
  int page = p["page"], pages = p["pages"];
  std::string out = fmt::format(
      R"(<p class="pager">Page <span data-key="page">{}</span> of <span data-key="pages">{}</span> )",
      page, std::max(pages, 1));
  if (page > 1)
    out +=
        fmt::format(R"(<a id="prev" href="{}?page={}{}">Previous</a> )", esc(base), page - 1, keep);
  if (page < pages)
    out += fmt::format(R"(<a id="next" href="{}?page={}{}">Next</a>)", esc(base), page + 1, keep);
  return out + "</p>";
}

// Pull requests against jobs: each cell a job's result.
std::string matrix_section(const nlohmann::json& m) {
  std::string body =
      fmt::format(R"(<h2>PRs × jobs (<span data-key="total_prs">{}</span> PRs)</h2>)",
                  m["total_prs"].get<int64_t>());
  body += "<table id=\"matrix\"><tr><th>PR</th>";
  for (const auto& c : m["columns"]) body += "<th>" + esc(c.get<std::string>()) + "</th>";
  body += "</tr>";
  for (const auto& row : m["rows"]) {
    body +=
        fmt::format(R"(<tr data-pr="{}"><td><a href="/pr/{}">#{}</a></td>)",
                    row["pr"].get<int64_t>(), row["pr"].get<int64_t>(), row["pr"].get<int64_t>());
    for (const auto& c : m["columns"]) {
      const auto& cells = row["cells"];
      std::string col = c;
      body += "<td>" + (cells.contains(col) ? job_link(cells[col]) : std::string()) + "</td>";
    }
    body += "</tr>";
  }
  return body + "</table>";
}

// Nightly runs, one row per job.
std::string runs_section(const nlohmann::json& runs) {
  std::string body = fmt::format(R"(<h2>Runs (<span data-key="total_runs">{}</span>)</h2>)",
                                 runs["total"].get<int64_t>());
  body += "<table id=\"runs\"><tr><th>SHA</th><th>Job</th><th>Result</th><th>Execution</th></tr>";
  for (const auto& j : runs["rows"])
    body += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(j["head_sha"].get<std::string>().substr(0, 12)),
                        esc(j["column"].get<std::string>()), job_link(j),
                        esc(num(j["exec_min"], " min")));
  return body + "</table>";
}

}  // namespace

std::string repo_page(const nlohmann::json& r) {
  std::string repo = r["repo"];
  std::string base = "/crcr/" + repo;
  std::string range = r["range"], tab = r["tab"];
  std::string body = fmt::format(R"(<h1>{} <span class="badge">{}</span></h1>)", esc(repo),
                                 esc(r["level"].get<std::string>()));
  body += demotion_banner(r["level_status"]) + "<p>";
  body += tabs(base, "tab", {"pr", "nightly"}, tab, "&amp;range=" + url_encode(range)) + " ";
  body += tabs(base, "range", {"24h", "7d", "30d"}, range, "&amp;tab=" + url_encode(tab)) + "</p>";
  body += stats_cards(r["stats"]);
  body += readiness_section(r["readiness"], r["level_status"]);
  std::string keep = fmt::format("&amp;tab={}&amp;range={}", url_encode(tab), url_encode(range));
  if (r.contains("matrix"))
    body += matrix_section(r["matrix"]) + pager(r["matrix"], base, keep);
  else
    body += runs_section(r["runs"]) + pager(r["runs"], base, keep);
  return html_page(repo + " — CRCR", body + detail_note(r));
}

std::string job_page(const nlohmann::json& j) {
  std::string body = fmt::format(
      R"(<h1>{} · {}</h1><p>{} · PR <a href="/pr/{}">#{}</a> · attempt {} · {}</p>)",
      esc(j["repo"].get<std::string>()), esc(j["column"].get<std::string>()), outcome(j),
      j["pr"].get<int64_t>(), j["pr"].get<int64_t>(), j["run_attempt"].get<int64_t>(),
      j["url"].get<std::string>().empty() ? std::string("no run link")
                                          : fmt::format(R"(<a href="{}">workflow run</a>)",
                                                        safe_href(j["url"].get<std::string>())));
  const auto& t = j["tests"];
  body += "<div class=\"cards\">" + card("Passed", "passed", t["passed"]) +
          card("Failed", "failed", t["failed"]) + card("Skipped", "skipped", t["skipped"]) +
          card("Queue", "queue_min", j["queue_min"], " min") +
          card("Execution", "exec_min", j["exec_min"], " min") + "</div>";
  const auto& v = j["triage_verdict"];
  body += "<h2>Triage verdict</h2>";
  if (v.is_object()) {
    body += fmt::format(
        R"(<div class="box" id="verdict"><b>{}</b> ({} confidence) — {}<br>analyzer: {})",
        esc(v.value("category", "")), esc(v.value("confidence", "")), esc(v.value("summary", "")),
        esc(analyzer_text(v)));
    if (v.contains("evidence") && v["evidence"].is_array()) {
      body += "<ul>";
      for (const auto& e : v["evidence"])
        body += "<li>" + esc(e.is_string() ? e.get<std::string>() : e.dump()) + "</li>";
      body += "</ul>";
    }
    body += "</div>";
  } else {
    body += "<p>None.</p>";
  }
  body += fmt::format(R"(<h2>Failed tests (<span data-key="failed_tests">{}</span>)</h2>)",
                      j["failed_tests"].size());
  for (const auto& f : j["failed_tests"]) {
    auto field = [&](const char* k) {
      return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : "";
    };
    body += fmt::format(R"(<div class="box failed-test"><b>{}</b><pre>{}</pre><pre>{}</pre></div>)",
                        esc(field("name").empty() ? field("test") : field("name")),
                        esc(field("message")), esc(field("stacktrace")));
  }
  return html_page("Job — CRCR", body);
}

std::string metrics_page(const nlohmann::json& m) {
  int days = m["days"];
  std::string tab = m["tab"];
  std::string body = "<h1>CRCR metrics</h1><p>";
  body +=
      tabs("/crcr/metrics", "tab", {"pr", "nightly"}, tab, fmt::format("&amp;days={}", days)) + " ";
  body += tabs("/crcr/metrics", "days", {"7", "14", "30", "90"}, std::to_string(days),
               "&amp;tab=" + url_encode(tab));
  body += "</p>";
  std::vector<ChartSeries> pass, failures, runs;
  for (const auto& b : m["backends"]) {
    ChartSeries p{b["repo"], {}}, f{b["repo"], {}}, n{b["repo"], {}};
    for (const auto& pt : b["points"]) {
      int64_t day = pt["day"];
      if (pt["pass_rate"].is_number()) p.points.push_back({day, pt["pass_rate"].get<double>()});
      f.points.push_back({day, pt["failures"].get<double>()});
      n.points.push_back({day, pt["runs"].get<double>()});
    }
    pass.push_back(p);
    failures.push_back(f);
    runs.push_back(n);
  }
  int64_t first = m["first_day"], last = m["last_day"];
  body += "<h2>Pass rate</h2>" + svg_line_chart("Pass rate per day", pass, first, last, "%", 100);
  body += "<h2>Failures</h2>" + svg_line_chart("Failed jobs per day", failures, first, last, "");
  body += "<h2>Total runs</h2>" + svg_line_chart("Jobs per day", runs, first, last, "");
  body +=
      "<h2>Totals</h2><table id=\"totals\"><tr><th>Backend</th><th>Runs</th><th>Failures</th></tr>";
  for (const auto& b : m["backends"]) {
    int64_t r = 0, f = 0;
    for (const auto& pt : b["points"])
      r += pt["runs"].get<int64_t>(), f += pt["failures"].get<int64_t>();
    body += fmt::format(R"(<tr data-repo="{}"><td>{}</td><td>{}</td><td>{}</td></tr>)",
                        esc(b["repo"].get<std::string>()), repo_link(b["repo"]), cell("runs", r),
                        cell("failures", f));
  }
  return html_page("CRCR metrics", body + "</table>" + detail_note(m));
}

std::string pr_page(const nlohmann::json& p) {
  int64_t pr = p["pr"];
  std::string body = fmt::format("<h1>PR #{}</h1><h2>CRCR</h2>", pr);
  if (p["backends"].empty()) body += "<p>No downstream results for this PR.</p>";
  for (const auto& b : p["backends"]) {
    body +=
        fmt::format(R"(<div class="box" data-repo="{}"><h3>{} <span class="badge">{}</span></h3>)",
                    esc(b["repo"].get<std::string>()), repo_link(b["repo"]),
                    esc(b["level"].get<std::string>()));
    body +=
        "<table><tr><th>Job</th><th>Attempt</th><th>Result</th><th>Verdict</th><th>Queue</th>"
        "<th>Execution</th><th></th></tr>";
    for (const auto& j : b["jobs"]) {
      std::string link =
          j["url"].get<std::string>().empty()
              ? ""
              : fmt::format(R"(<a href="{}">run</a> )", safe_href(j["url"].get<std::string>()));
      body += fmt::format(
          R"(<tr><td>{}</td><td>{}</td><td>{}</td><td data-key="verdict">{}</td><td>{}</td><td>{}</td><td>{}<a href="/crcr/job?key={}">details</a></td></tr>)",
          esc(j["column"].get<std::string>()), j["run_attempt"].get<int64_t>(), outcome(j),
          esc(verdict_text(j)), cell("queue_min", j["queue_min"], " min"),
          cell("exec_min", j["exec_min"], " min"), link, url_encode(j["key"].get<std::string>()));
    }
    body += "</table></div>";
  }
  return html_page(fmt::format("PR #{} — CRCR", pr), body);
}

}  // namespace ootci
