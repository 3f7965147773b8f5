// Streaming JUnit ingest against a baseline: a ~200 MB pytest-style report, parsed by ootci's
// chunked pugixml ingest (alone, and writing into an evidence database) and by Python's
// xml.etree.ElementTree.iterparse doing the same extraction. Prints the times and their ratio.
#include "evidence/junit_ingest.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/time.h"
#include "evidence/evidence_store.h"
#include "testing/test_env.h"

namespace ootci::bench::junit_ingest {

// What both sides compute over every testcase, so they provably did the same work.
struct Summary {
  size_t testcases = 0;
  std::map<std::string, size_t> outcomes;
  size_t id_bytes = 0;
  size_t message_bytes = 0;
  size_t with_error_class = 0;
  size_t with_mode = 0;
  double seconds = 0;
  double peak_rss_mb = 0;

  void add(const TestResult& t) {
    ++testcases;
    ++outcomes[to_string(t.outcome)];
    id_bytes += t.test_id.size();
    message_bytes += t.message.size();
    with_error_class += !t.error_class.empty();
    with_mode += t.mode.has_value();
  }
  std::string digest() const {
    return fmt::format(
        "{} testcases, outcomes {}, id bytes {}, message bytes {}, "
        "with error_class {}, with mode {}",
        testcases, nlohmann::json(outcomes).dump(), id_bytes, message_bytes, with_error_class,
        with_mode);
  }
};

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// A pytest --junitxml report shaped like a PyTorch device-test run: mostly passes, skips with
// reasons, some xfails, failures with tracebacks full of entities, a few setup errors.
size_t generate_report(const std::string& path, size_t target_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("cannot write " + path);
  std::mt19937 rng(1234);
  const char* modules[] = {"test.test_ops", "test.test_view_ops", "test.test_torch",
                           "test.test_binary_ufuncs"};
  const char* classes[] = {"TestCommonPRIVATEUSEONE", "TestViewOpsPRIVATEUSEONE",
                           "TestTorchDeviceTypePRIVATEUSEONE", "TestBinaryUfuncsPRIVATEUSEONE"};
  const char* ops[] = {"add", "mul", "view", "index_select", "nn.functional.conv2d", "sum"};
  const char* dtypes[] = {"float32", "float16", "bfloat16", "int64", "bool", "complex64"};
  std::string traceback;
  for (int i = 0; i < 24; ++i)
    traceback += fmt::format(
        "torch/testing/_internal/common_device_type.py:{}: in instantiated_test\n"
        "    result = test(self, **param_kwargs)  # x &lt; y &amp;&amp; a &gt; b\n",
        400 + i);
  traceback +=
      "E       AssertionError: Tensor-likes are not close!\nE       Mismatched elements: "
      "3 / 64 (4.7%)\nE       Greatest absolute difference: 0.5 at index (1, 2)";

  fmt::memory_buffer buf;
  size_t written = 0;
  auto flush = [&] {
    std::fwrite(buf.data(), 1, buf.size(), f);
    written += buf.size();
    buf.clear();
  };
  fmt::format_to(std::back_inserter(buf),
                 "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites>\n  <testsuite "
                 "name=\"pytest\" errors=\"0\" failures=\"0\" skipped=\"0\" tests=\"0\" "
                 "time=\"0\" hostname=\"bench\">\n");
  for (size_t n = 0; written + buf.size() < target_bytes; ++n) {
    size_t k = rng() % 4;
    const char* op = ops[rng() % 6];
    const char* dtype = dtypes[rng() % 6];
    auto out = std::back_inserter(buf);
    fmt::format_to(out,
                   "    <testcase classname=\"{}.{}\" name=\"test_{}_privateuseone_{}_{}\" "
                   "time=\"{}.{:03}\"",
                   modules[k], classes[k], op, dtype, n, rng() % 3, rng() % 1000);
    unsigned roll = rng() % 100;
    std::string props =
        n % 2 ? fmt::format(
                    "<properties><property name=\"ootci.mode\" value=\"{}\" /><property "
                    "name=\"ootci.op\" value=\"{}\" /><property name=\"ootci.dtype\" "
                    "value=\"{}\" /></properties>",
                    roll < 80 ? "mandatory_success" : "xfail", op, dtype)
              : "";
    if (roll < 65) {
      if (props.empty())
        fmt::format_to(out, " />\n");
      else
        fmt::format_to(out, ">{}</testcase>\n", props);
    } else if (roll < 85) {
      fmt::format_to(out,
                     ">{}<skipped type=\"pytest.skip\" message=\"{} not supported on "
                     "privateuseone for {}\">/src/torch/test/test_ops.py:{}: {} not supported on "
                     "privateuseone for {}</skipped></testcase>\n",
                     props, op, dtype, 100 + n % 900, op, dtype);
    } else if (roll < 90) {
      fmt::format_to(out,
                     ">{}<skipped type=\"pytest.xfail\" message=\"known issue #{}\" "
                     "/></testcase>\n",
                     props, n % 997);
    } else if (roll < 98) {
      fmt::format_to(out,
                     ">{}<failure message=\"RuntimeError: mismatch in &lt;{}&gt; for {} at "
                     "index {}\">{}</failure><system-err>warning: &quot;slow path&quot; "
                     "taken</system-err></testcase>\n",
                     props, op, dtype, n % 64, traceback);
    } else {
      fmt::format_to(out,
                     ">{}<error message=\"failed on setup with &quot;ValueError: fixture "
                     "{} broke&quot;\">{}</error></testcase>\n",
                     props, op, traceback.substr(0, 600));
    }
    if (buf.size() > (1 << 20)) flush();
  }
  fmt::format_to(std::back_inserter(buf), "  </testsuite>\n</testsuites>\n");
  flush();
  std::fclose(f);
  return written;
}

// The same extraction as junit_ingest.cc, in the idiomatic streaming Python: iterparse, each
// testcase removed from its suite once read so memory stays bounded.
constexpr const char* kPythonBaseline = R"py(
import json, re, resource, sys, time
import xml.etree.ElementTree as ET

ERROR_CLASS = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*?)(?::|$)", re.M)
SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning")

def error_class_in(message):
    for m in ERROR_CLASS.finditer(message):
        last = m.group(1).rstrip(".").rsplit(".", 1)[-1]
        if last and not last[0].isdigit() and last.endswith(SUFFIXES):
            return last
    return ""

def location(classname, file_attr):
    parts = classname.split(".") if classname else []
    end = len(parts)
    while end > 0 and parts[end - 1][:1].isupper():
        end -= 1
    file = file_attr or ("/".join(parts[:end]) + ".py" if end else "")
    return file, "::".join(parts[end:])

def text_of(e):
    return e.text or ""

start = time.perf_counter()
summary = {"testcases": 0, "outcomes": {}, "id_bytes": 0, "message_bytes": 0,
           "with_error_class": 0, "with_mode": 0}
suites = []
for event, elem in ET.iterparse(sys.argv[1], events=("start", "end")):
    if event == "start":
        if elem.tag == "testsuite":
            suites.append(elem)
        continue
    if elem.tag != "testcase":
        continue
    file, cls = location(elem.get("classname", ""), elem.get("file", ""))
    name = elem.get("name", "")
    test_id = "::".join(p for p in (file, cls, name) if p)
    duration = float(elem.get("time", "0") or 0)
    failure = error = skipped = None
    reruns = 0
    mode = op = dtype = ""
    for c in elem:
        if c.tag == "failure" and failure is None: failure = c
        elif c.tag == "error" and error is None: error = c
        elif c.tag == "skipped" and skipped is None: skipped = c
        elif c.tag in ("rerun", "rerunFailure", "rerunError", "flakyFailure", "flakyError"): reruns += 1
        elif c.tag == "properties":
            for p in c.iter("property"):
                k, v = p.get("name"), p.get("value", "")
                if k == "ootci.mode": mode = v
                elif k == "ootci.op": op = v
                elif k == "ootci.dtype": dtype = v
    problem = failure if failure is not None else error if error is not None else skipped
    message = error_class = ""
    if problem is not None:
        attr_message = problem.get("message", "")
        body = text_of(problem)
        message = (attr_message or body)[:2000]
        if problem is skipped:
            outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        else:
            outcome = "failed" if problem is failure else "error"
            if message.startswith("[XPASS(strict)]"):
                error_class = "XPASS(strict)"
            else:
                error_class = (problem.get("type", "") or error_class_in(attr_message)
                               or ("AssertionError" if attr_message.startswith("assert ") else "")
                               or error_class_in(body))
    else:
        outcome = "passed"
    summary["testcases"] += 1
    summary["outcomes"][outcome] = summary["outcomes"].get(outcome, 0) + 1
    summary["id_bytes"] += len(test_id.encode())
    summary["message_bytes"] += len(message.encode())
    summary["with_error_class"] += bool(error_class)
    summary["with_mode"] += bool(mode)
    if suites:
        suites[-1].remove(elem)
    elem.clear()
summary["seconds"] = time.perf_counter() - start
summary["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(summary))
)py";

Summary cpp_parse(const std::string& report, size_t chunk_bytes) {
  Summary s;
  int64_t start = steady_us();
  ingest_junit(
      report, [&](TestResult&& t) { s.add(t); }, chunk_bytes);
  s.seconds = (steady_us() - start) / 1e6;
  s.peak_rss_mb = peak_rss_mb();
  return s;
}

// As `ootci ingest` does it: batches of kJunitBatchResults, one transaction each.
Summary cpp_parse_and_insert(const std::string& report, size_t chunk_bytes, const std::string& db) {
  Summary s;
  int64_t start = steady_us();
  auto store = EvidenceStore::open(db);
  RunInfo run;
  run.id = "r-bench";
  run.backend = "bench";
  run.status = RunStatus::kRunning;
  run.started_ms = now_ms();
  store->begin_run(run);
  std::vector<TestResult> batch;
  ingest_junit(
      report,
      [&](TestResult&& t) {
        s.add(t);
        t.finished_ms = now_ms();
        batch.push_back(std::move(t));
        if (batch.size() == kJunitBatchResults) {
          store->record_batch(run.id, batch);
          batch.clear();
        }
      },
      chunk_bytes);
  store->record_batch(run.id, batch);
  store->finish_run(run.id, now_ms(), RunStatus::kFinished, Conclusion::kSuccess, {});
  s.seconds = (steady_us() - start) / 1e6;
  return s;
}

Summary python_parse(const std::string& python, const std::string& script,
                     const std::string& report) {
  std::string cmd = fmt::format("'{}' '{}' '{}'", python, script, report);
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error("cannot run " + python);
  std::string out;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, p)) > 0;) out.append(chunk, n);
  if (pclose(p) != 0) throw Error("python baseline failed: " + out);
  nlohmann::json j = nlohmann::json::parse(out);
  Summary s;
  s.testcases = j["testcases"];
  s.outcomes = j["outcomes"].get<std::map<std::string, size_t>>();
  s.id_bytes = j["id_bytes"];
  s.message_bytes = j["message_bytes"];
  s.with_error_class = j["with_error_class"];
  s.with_mode = j["with_mode"];
  s.seconds = j["seconds"];
  s.peak_rss_mb = j["peak_rss_mb"];
  return s;
}

int main(int argc, char** argv) {
  CLI::App app{"JUnit XML ingest: ootci's streaming pugixml parse against Python iterparse"};
  double mb = 200;
  double chunk_mb = 8;
  std::string python = "/usr/bin/python3";
  std::string report;
  app.add_option("--mb", mb, "size of the generated report in MB (default 200)");
  app.add_option("--chunk-mb", chunk_mb, "ootci's read chunk in MB (default 8)");
  app.add_option("--python", python, "the Python for the baseline (default /usr/bin/python3)");
  app.add_option("--report", report, "use this report instead of generating one");
  CLI11_PARSE(app, argc, argv);
  try {
    std::string dir = make_temp_dir();
    if (report.empty()) {
      report = dir + "/report.xml";
      generate_report(report, static_cast<size_t>(mb * (1 << 20)));
    }
    double size_mb = std::filesystem::file_size(report) / double(1 << 20);
    size_t chunk = static_cast<size_t>(chunk_mb * (1 << 20));
    write_file(dir + "/baseline.py", kPythonBaseline);

    // The C++ parse goes first, so the process's peak RSS is its own.
    Summary parse = cpp_parse(report, chunk);
    Summary insert = cpp_parse_and_insert(report, chunk, dir + "/evidence.db");
    Summary py = python_parse(python, dir + "/baseline.py", report);

    std::cout << fmt::format("junit ingest: {:.0f} MB report, {} testcases, chunk {:.0f} MB\n",
                             size_mb, parse.testcases, chunk_mb);
    std::cout << fmt::format("{:<40} {:>8} {:>8} {:>12}\n", "what", "seconds", "MB/s",
                             "peak RSS MB");
    auto line = [&](const std::string& what, const Summary& s, bool rss) {
      std::cout << fmt::format("{:<40} {:>8.2f} {:>8.0f} {:>12}\n", what, s.seconds,
                               size_mb / s.seconds,
                               rss ? fmt::format("{:.0f}", s.peak_rss_mb) : std::string("-"));
    };
    line("ootci streaming parse (pugixml)", parse, true);
    line("ootci parse + insert into evidence.db", insert, false);
    line("python3 ElementTree.iterparse", py, true);
    std::cout << fmt::format(
        "ratio python/ootci: parse {:.2f}x; python parse / ootci parse+insert {:.2f}x\n",
        py.seconds / parse.seconds, py.seconds / insert.seconds);

    bool same = parse.digest() == py.digest() && insert.digest() == parse.digest();
    std::cout << (same ? "same extraction: " + parse.digest() + "\n"
                       : "EXTRACTIONS DIFFER:\n  ootci:  " + parse.digest() + "\n  insert: " +
                             insert.digest() + "\n  python: " + py.digest() + "\n");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::junit_ingest
