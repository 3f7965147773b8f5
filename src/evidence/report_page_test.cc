#include "evidence/report_page.h"

#include <gtest/gtest.h>

#include <regex>

#include "base/atomic_file.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

TestResult variant(const std::string& test_id, const std::string& outcome,
                   const std::string& op = "", const std::string& dtype = "",
                   double duration_s = 0.5, const std::string& message = "") {
  TestResult t;
  t.test_id = test_id;
  t.file = test_id.substr(0, test_id.find("::"));
  t.name = test_id.substr(test_id.rfind("::") + 2);
  t.op = op;
  t.dtype = dtype;
  t.mode = TestMode::kMandatorySuccess;
  t.outcome = *parse_outcome(outcome);
  t.duration_s = duration_s;
  t.message = message;
  if (outcome == "failed") t.error_class = "AssertionError";
  t.finished_ms = 1;
  return t;
}

class ReportPageTest : public ::testing::Test {
 protected:
  std::string dir_ = make_temp_dir();
  std::unique_ptr<EvidenceStore> store_ = EvidenceStore::open(dir_ + "/evidence.db");

  // A run that started and holds `results`, still running.
  void begin(const std::string& id, int64_t started_ms, const std::vector<TestResult>& results) {
    RunInfo r;
    r.id = id;
    r.backend = "ref";
    r.config_hash = "h";
    r.status = RunStatus::kRunning;
    r.started_ms = started_ms;
    store_->begin_run(r);
    store_->record_batch(id, results);
  }

  void run(const std::string& id, int64_t started_ms, const std::vector<TestResult>& results,
           const std::string& verdict) {
    begin(id, started_ms, results);
    store_->finish_run(id, started_ms + 5000, RunStatus::kFinished, parse_conclusion(verdict),
                       {{"run_id", id}});
  }

  // The number a data attribute marks, e.g. data-count="failed">3<.
  static std::string marked(const std::string& html, const std::string& attr) {
    std::smatch m;
    std::regex re(attr + "\">([^<]*)<");
    return std::regex_search(html, m, re) ? m[1].str() : "(absent)";
  }
};

TEST_F(ReportPageTest, CountsNewFailuresFlakyErrorsAndTheMapComeFromTheStore) {
  run("r-1", 1000,
      {variant("a.py::T::test_add_float32", "passed", "add", "float32"),
       variant("a.py::T::test_add_int64", "passed", "add", "int64"),
       variant("a.py::T::test_mul_float32", "failed", "mul", "float32", 0.5, "known\nmore")},
      "success");
  TestResult flaky = variant("b.py::test_flaky", "passed");
  flaky.flaky = true;
  flaky.reruns = 1;
  run("r-2", 2000,
      {variant("a.py::T::test_add_float32", "failed", "add", "float32", 2.0,
               "AssertionError: Tensor-likes are not close!\nMismatched elements: 1 / 3"),
       variant("a.py::T::test_add_int64", "xfailed", "add", "int64"),
       variant("a.py::T::test_mul_float32", "failed", "mul", "float32", 0.5, "known\nmore"),
       variant("a.py::T::test_mul_float64", "skipped", "mul", "float64"), flaky},
      "failure");

  ReportPage page = gather_report_page(*store_, "r-2");
  ASSERT_TRUE(page.last_green);
  EXPECT_EQ(page.last_green->id, "r-1");
  std::string html = render_report_page(page);

  EXPECT_EQ(marked(html, "data-count=\"total"), "5");
  EXPECT_EQ(marked(html, "data-count=\"failed"), "2");
  EXPECT_EQ(marked(html, "data-count=\"flaky"), "1");
  EXPECT_NE(html.find("<li>b.py::test_flaky</li>"), std::string::npos);
  // add:float32 newly fails (it passed in r-1); mul:float32 failed there too.
  EXPECT_NE(html.find("<tr class=\"newly\"><td>a.py::T::test_add_float32</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"known\"><td>a.py::T::test_mul_float32</td>"), std::string::npos);
  // Errors are grouped by class and first line.
  EXPECT_NE(html.find("<td class=\"n\">1</td><td>AssertionError</td><td><pre>AssertionError: "
                      "Tensor-likes are not close!</pre>"),
            std::string::npos);
  // Map cells: worst outcome first; not covered cells are marked.
  EXPECT_NE(html.find("<td class=\"fail\" data-op=\"add\" data-dtype=\"float32\""),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"xfail\" data-op=\"add\" data-dtype=\"int64\""),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"skip\" data-op=\"mul\" data-dtype=\"float64\""),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"none\" data-op=\"mul\" data-dtype=\"int64\""),
            std::string::npos);
  // Columns in torch's dtype order: int64 before float32 before float64.
  EXPECT_LT(html.find("<th>int64</th>"), html.find("<th>float32</th>"));
  EXPECT_LT(html.find("<th>float32</th>"), html.find("<th>float64</th>"));
  // The trend of a.py: r-1 (3 variants, 1 failing), then r-2.
  EXPECT_NE(html.find("<title>r-1: 2 pass 1 fail</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>r-2: 1 xfail 1 skip 2 fail</title>"), std::string::npos);
  EXPECT_EQ(page.trend.at("b.py").size(), 2u);
  EXPECT_TRUE(page.trend.at("b.py").front().outcomes.counts.empty());  // r-1 did not run b.py
}

TEST_F(ReportPageTest, FailuresAreGroupedByCause) {
  auto with = [](TestResult t, const std::string& error_class, const std::string& message) {
    t.error_class = error_class;
    t.message = message;
    return t;
  };
  run("r-1", 1000,
      {with(variant("a.py::T::test_neg_int16", "error", "neg", "int16"), "NotImplementedError",
            "Could not run 'aten::neg.out' with arguments from the 'PrivateUse1' backend"),
       with(variant("a.py::T::test_abs_int16", "failed", "abs", "int16"), "RuntimeError",
            "\"abs_cpu\" not implemented for 'Short'"),
       // A backend written in Python (PyTorch's OpenReg) says so in its own words.
       with(variant("a.py::T::test_real_complex64", "failed", "real", "complex64"), "RuntimeError",
            "aten.view_as_real.default view op is not handled yet"),
       with(variant("a.py::T::test_add_float32", "failed", "add", "float32"), "AssertionError",
            "Tensor-likes are not close!\n\nMismatched elements: 3 / 9"),
       with(variant("a.py::T::test_add_int64", "failed", "add", "int64"), "AssertionError",
            "Scalars are not equal!"),
       with(variant("a.py::T::test_mul_int8", "error", "mul", "int8"), "SIGSEGV", "died"),
       with(variant("a.py::T::test_atleast_int16", "error"), "Timeout",
            "ran longer than its limit of 30 s"),
       with(variant("a.py::T::test_other", "failed"), "AssertionError", "False is not true"),
       variant("a.py::T::test_fine", "passed", "add", "float64")},
      "failure");
  std::string html = render_report_page(gather_report_page(*store_, "r-1"));
  auto row = [&](const std::string& cause) {
    std::smatch m;
    std::regex re("<tr data-cause=\"" + cause +
                  "\"><td>[^<]*</td><td class=\"n\">(\\d+)</td><td>([^<]*)</td>");
    return std::regex_search(html, m, re) ? m[1].str() + " | " + m[2].str() : "(absent)";
  };
  EXPECT_EQ(row("missing kernel"), "3 | abs (1), neg (1), real (1)");
  EXPECT_EQ(row("wrong result"), "2 | add (2)");
  EXPECT_EQ(row("crash"), "1 | mul (1)");
  EXPECT_EQ(row("hang"), "1 | -");
  EXPECT_EQ(row("other"), "1 | -");
  EXPECT_LT(html.find("<h2>Failures by cause</h2>"), html.find("<h2>Errors by message</h2>"));
}

TEST_F(ReportPageTest, WhatATestSaysIsShownAsTextAndThePageLoadsNothing) {
  run("r-x", 1000,
      {variant("a.py::test_<b>bold</b>", "failed", "add<script>", "float32", 1,
               "<script>alert('x')</script><img src=x onerror=alert(1)>")},
      "failure");
  ReportPage page = gather_report_page(*store_, "r-x");
  std::string html = render_report_page(page);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  // No external resource: no src= or href= outside the page itself.
  EXPECT_FALSE(std::regex_search(html, std::regex("(src|href)=\"(https?:)?//")));
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
}

TEST_F(ReportPageTest, TriageAndTheReproductionCommandComeFromTheRunFolder) {
  run("r-t", 1000, {variant("test/a.py::T::test_x", "failed", "add", "float32")}, "failure");
  std::string run_dir = dir_ + "/runs/r-t";
  write_file_atomically(run_dir + "/triage_verdict.json",
                        R"({"category": "backend", "summary": "culprit abc <in> backend"})");
  write_file_atomically(run_dir + "/plan.json",
                        R"({"files": [{"relpath": "test/a.py", "path": "/src/torch/test/a.py"}]})");
  ReportPage page = gather_report_page(*store_, "r-t", run_dir);
  page.python = {"/usr/bin/python3"};
  page.reproduce_dir = run_dir;
  page.reproduce_env = {{"OOTCI_PLAN", run_dir + "/plan.json"}, {"QUOTE", "it's"}};
  std::string html = render_report_page(page);
  EXPECT_NE(html.find("data-triage=\"category\">backend</b>"), std::string::npos);
  EXPECT_NE(html.find("culprit abc &lt;in&gt; backend"), std::string::npos);
  EXPECT_NE(html.find("QUOTE=&#39;it&#39;\\&#39;&#39;s&#39;"), std::string::npos);
  EXPECT_NE(html.find("-m pytest -p no:cacheprovider &#39;/src/torch/test/a.py::T::test_x&#39;"),
            std::string::npos);
}

TEST_F(ReportPageTest, TheDevicePageMapsTheLatestFinishedRunOfEveryFile) {
  run("r-1", 1000,
      {variant("a.py::T::test_add_float32", "failed", "add", "float32"),
       variant("b.py::T::test_mul_float32", "passed", "mul", "float32")},
      "failure");
  run("r-2", 2000, {variant("a.py::T::test_add_float32", "passed", "add", "float32")}, "success");
  begin("r-3", 3000, {variant("a.py::T::test_add_float32", "failed", "add", "float32")});
  DevicePage d = gather_device_page(*store_, "ref");
  EXPECT_EQ(d.run_of_file, (std::map<std::string, std::string>{{"a.py", "r-2"}, {"b.py", "r-1"}}));
  ASSERT_EQ(d.results.size(), 2u);
  std::string html = render_device_page(d);
  EXPECT_NE(html.find("<td class=\"pass\" data-op=\"add\" data-dtype=\"float32\""),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"pass\" data-op=\"mul\" data-dtype=\"float32\""),
            std::string::npos);
  EXPECT_NE(html.find("<tr data-file=\"b.py\"><td>b.py</td><td>r-1</td>"), std::string::npos);
  EXPECT_TRUE(gather_device_page(*store_, "other").results.empty());

  // The last propose/rebucket, when the workspace holds one; names are text.
  EXPECT_NE(html.find("id=\"bucket-changes\">No <code>ootci select propose"), std::string::npos);
  write_file_atomically(dir_ + "/bucket_changes.json",
                        R"({"command": "rebucket", "written": false, "at": "2026-12-02T10:00:00Z",
                            "changes": [{"file": "a.py", "name": "T::test_<i>x</i>",
                                         "from": "xfail", "to": "mandatory_success",
                                         "reason": "promoted"},
                                        {"file": "a.py", "name": "T::test_y", "from": "",
                                         "to": "skip", "reason": "new"}]})");
  add_bucket_changes(d, dir_ + "/bucket_changes.json");
  html = render_device_page(d);
  EXPECT_NE(html.find("ootci select rebucket at 2026-12-02T10:00:00Z: 2 change(s), proposed only"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>a.py</td><td>T::test_&lt;i&gt;x&lt;/i&gt;</td><td>xfail</td>"
                      "<td>mandatory_success</td><td>promoted</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>T::test_y</td><td>(new)</td><td>skip</td>"), std::string::npos);
  DevicePage absent;
  add_bucket_changes(absent, dir_ + "/none.json");
  EXPECT_TRUE(absent.bucket_changes.is_null());
}

TEST_F(ReportPageTest, ARunWithoutAVerdictShowsItsStatusInstead) {
  begin("r-i", 1000, {variant("a.py::test_a", "passed")});
  store_->finish_run("r-i", 2000, RunStatus::kInterrupted, std::nullopt, {});
  std::string html = render_report_page(gather_report_page(*store_, "r-i"));
  EXPECT_NE(html.find("id=\"verdict\">interrupted</span>"), std::string::npos);
}

TEST_F(ReportPageTest, AnUnknownRunIsAnError) {
  EXPECT_THROW(gather_report_page(*store_, "r-none"), std::exception);
}

TEST(OutcomeClass, MapsEveryOutcome) {
  EXPECT_EQ(to_string(outcome_class(Outcome::kPassed)), "pass");
  EXPECT_EQ(to_string(outcome_class(Outcome::kXpassed)), "pass");
  EXPECT_EQ(to_string(outcome_class(Outcome::kXfailed)), "xfail");
  EXPECT_EQ(to_string(outcome_class(Outcome::kSkipped)), "skip");
  EXPECT_EQ(to_string(outcome_class(Outcome::kFailed)), "fail");
  EXPECT_EQ(to_string(outcome_class(Outcome::kError)), "fail");
}

}  // namespace
}  // namespace ootci
