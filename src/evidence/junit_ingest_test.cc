#include "evidence/junit_ingest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <pugixml.hpp>

#include "base/error.h"
#include "base/utf8.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::vector<TestResult> ingest(const std::string& path, size_t chunk_bytes = kJunitChunkBytes) {
  std::vector<TestResult> out;
  ingest_junit(
      path, [&](TestResult&& t) { out.push_back(std::move(t)); }, chunk_bytes);
  return out;
}

// Every field, so a difference names itself in the failure output.
std::string describe(const TestResult& t) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", t.test_id, t.file, t.cls, t.name,
                     t.device, t.dtype, t.op, mode_text(t.mode), to_string(t.outcome), t.duration_s,
                     t.error_class, t.message, t.reruns, t.flaky);
}

std::vector<std::string> describe(const std::vector<TestResult>& results) {
  std::vector<std::string> out;
  for (const auto& t : results) out.push_back(describe(t));
  return out;
}

std::string error_of(const std::string& path, size_t chunk_bytes = kJunitChunkBytes) {
  try {
    ingest(path, chunk_bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> fixture_reports() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(fixture_path("junit")))
    if (e.path().extension() == ".xml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JunitIngest, EveryFixtureMatchesItsTestsuiteCountsAtAnyChunkSize) {
  std::vector<std::string> reports = fixture_reports();
  ASSERT_FALSE(reports.empty());
  for (const std::string& path : reports) {
    SCOPED_TRACE(path);
    // The counts the report states about itself, read with an ordinary DOM parse.
    pugi::xml_document doc;
    ASSERT_TRUE(doc.load_file(path.c_str()));
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    for (pugi::xpath_node s : doc.select_nodes("//testsuite")) {
      tests += s.node().attribute("tests").as_int();
      failures += s.node().attribute("failures").as_int();
      errors += s.node().attribute("errors").as_int();
      skipped += s.node().attribute("skipped").as_int();
    }
    std::vector<TestResult> results = ingest(path);
    std::map<Outcome, int> outcomes;
    for (const auto& t : results) ++outcomes[t.outcome];
    EXPECT_EQ(static_cast<int>(results.size()), tests);
    EXPECT_EQ(outcomes[Outcome::kFailed], failures);
    EXPECT_EQ(outcomes[Outcome::kError], errors);
    EXPECT_EQ(outcomes[Outcome::kSkipped] + outcomes[Outcome::kXfailed], skipped);
    for (size_t chunk : {1, 2, 3, 17, 100, 1000, 4096})
      EXPECT_EQ(describe(ingest(path, chunk)), describe(results)) << "chunk " << chunk;
  }
}

TEST(JunitIngest, MapsTheTtTorchReport) {
  std::vector<TestResult> r = ingest(fixture_path("junit/tt-torch.tests_torch.pytest-junit.xml"));
  ASSERT_EQ(r.size(), 250u);
  std::map<Outcome, int> outcomes;
  for (const auto& t : r) ++outcomes[t.outcome];
  EXPECT_EQ(outcomes,
            (std::map<Outcome, int>{
                {Outcome::kPassed, 37}, {Outcome::kSkipped, 211}, {Outcome::kXfailed, 2}}));

  EXPECT_EQ(r[0].test_id, "tests/torch/test_basic.py::test_abs");
  EXPECT_EQ(r[0].file, "tests/torch/test_basic.py");
  EXPECT_EQ(r[0].cls, "");
  EXPECT_EQ(r[0].name, "test_abs");
  EXPECT_EQ(r[0].outcome, Outcome::kPassed);
  EXPECT_DOUBLE_EQ(r[0].duration_s, 2.283);
  EXPECT_EQ(r[0].message, "");
  EXPECT_FALSE(r[0].mode);

  EXPECT_EQ(r[6].test_id, "tests/torch/test_basic.py::test_constant_ones");
  EXPECT_EQ(r[6].outcome, Outcome::kSkipped);
  EXPECT_EQ(r[6].message, "Torch keeps the 'value' as dialect resource which are not processed.");
  EXPECT_EQ(r[6].error_class, "");
  EXPECT_EQ(r[11].test_id, "tests/torch/test_basic.py::test_linear_with_bias");
  EXPECT_EQ(r[11].outcome, Outcome::kXfailed);
  EXPECT_EQ(r[20].name, "test_slice[0-64-2]");
  EXPECT_EQ(r[20].message, "Skipped");
}

// Everything a streaming cut can get wrong, next to each other.
constexpr const char* kTricky = R"(<?xml version="1.0" encoding="utf-8"?>
<!-- a comment before the root: <testcase name="not_a_test"/> -->
<testsuites>
  <testsuite name="pytest" errors="2" failures="4" skipped="2" tests="12">
    <properties><property name="suite" value="ignored"/></properties>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_add_privateuseone_float32" time="0.5">
      <properties>
        <property name="ootci.mode" value="mandatory_success"/>
        <property name="ootci.op" value="add"/>
        <property name="ootci.dtype" value="float32"/>
        <property name="ootci.device" value="privateuseone"/>
      </properties>
      <system-out>looks like a tag: &lt;/testcase&gt;</system-out>
    </testcase>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_entities[&lt;&amp;&gt;-&quot;q&quot;]" time="1e-3"><failure message="RuntimeError: caf&#233; &#x1F600; &gt; done">Traceback
E   RuntimeError: café</failure></testcase>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_cdata" time="0.25">
      <failure message=""><![CDATA[E   ValueError: bad value </testcase> <testcase name="inside_cdata"/> ]]>and after</failure>
    </testcase>
    <!-- <testcase classname="commented.out" name="test_never"></testcase> -->
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_quoted_gt" time="0" note="a > b /> c"/>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_typed" time="2"><failure type="torch.OutOfMemoryError" message="out of memory"/></testcase>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_strict" time="0.1"><failure message="[XPASS(strict)] known bad"/></testcase>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_setup" time="0.1"><error message="failed on setup with &quot;ImportError: no module&quot;">trace</error></testcase>
    <testcase classname="test.test_ops.TestCommonPRIVATEUSEONE" name="test_fail_and_teardown" time="0.1"><failure message="assert 1 == 2">E assert 1 == 2</failure><error message="failed on teardown with &quot;OSError: x&quot;"/></testcase>
  </testsuite>
  <testsuite name="second" errors="0" failures="0" skipped="0" tests="4">
    <testcase classname="test_flat" name="test_xfail" time="0.2"><skipped type="pytest.xfail" message="reason: known"/></testcase>
    <testcase classname="test_flat" name="test_skip" time="0.0"><skipped type="pytest.skip" message="">test_flat.py:3: not here</skipped></testcase>
    <testcase classname="pkg.test_nested.TestOuter.TestInner" name="test_rerun" time="3"><rerun message="first try">boom</rerun><rerun message="second try"/></testcase>
    <testcase classname="TestTorchDeviceTypeCPU" name="test_file_attr" file="test/test_torch.py" time="4">
      <error message="Timeout">timed out</error>
    </testcase>
  </testsuite>
</testsuites>
)";

TEST(JunitIngest, TrickyReportIsTheSameAtEveryChunkSize) {
  std::string path = make_temp_dir() + "/tricky.xml";
  write_file(path, kTricky);
  std::vector<TestResult> whole = ingest(path);
  ASSERT_EQ(whole.size(), 12u);
  for (size_t chunk = 1; chunk <= 300; ++chunk)
    ASSERT_EQ(describe(ingest(path, chunk)), describe(whole)) << "chunk " << chunk;
  // CRLF line ends read the same, as XML says they must.
  std::string crlf;
  for (char c : std::string(kTricky)) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  write_file(path, crlf);
  EXPECT_EQ(describe(ingest(path, 5)), describe(whole));
}

TEST(JunitIngest, MapsTheTrickyReport) {
  std::string path = make_temp_dir() + "/tricky.xml";
  write_file(path, kTricky);
  std::vector<TestResult> r = ingest(path, 7);
  ASSERT_EQ(r.size(), 12u);

  const TestResult& add = r[0];
  EXPECT_EQ(add.test_id,
            "test/test_ops.py::TestCommonPRIVATEUSEONE::test_add_privateuseone_float32");
  EXPECT_EQ(add.file, "test/test_ops.py");
  EXPECT_EQ(add.cls, "TestCommonPRIVATEUSEONE");
  EXPECT_EQ(add.outcome, Outcome::kPassed);
  EXPECT_EQ(add.mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(add.op, "add");
  EXPECT_EQ(add.dtype, "float32");
  EXPECT_EQ(add.device, "privateuseone");
  EXPECT_DOUBLE_EQ(add.duration_s, 0.5);

  EXPECT_EQ(r[1].name, "test_entities[<&>-\"q\"]");
  EXPECT_EQ(r[1].outcome, Outcome::kFailed);
  EXPECT_EQ(r[1].message, "RuntimeError: café 😀 > done");
  EXPECT_EQ(r[1].error_class, "RuntimeError");
  EXPECT_DOUBLE_EQ(r[1].duration_s, 0.001);

  EXPECT_EQ(r[2].name, "test_cdata");
  EXPECT_EQ(r[2].message,
            "E   ValueError: bad value </testcase> <testcase name=\"inside_cdata\"/> and after");
  EXPECT_EQ(r[2].error_class, "ValueError");

  EXPECT_EQ(r[3].name, "test_quoted_gt");
  EXPECT_EQ(r[3].outcome, Outcome::kPassed);
  EXPECT_EQ(r[4].error_class, "torch.OutOfMemoryError");  // the type attribute, as written
  EXPECT_EQ(r[5].error_class, "XPASS(strict)");
  EXPECT_EQ(r[5].outcome, Outcome::kFailed);
  EXPECT_EQ(r[6].outcome, Outcome::kError);
  EXPECT_EQ(r[6].error_class, "ImportError");
  EXPECT_EQ(r[6].message, "failed on setup with \"ImportError: no module\"");
  EXPECT_EQ(r[7].outcome, Outcome::kFailed);
  EXPECT_EQ(r[7].error_class, "AssertionError");

  EXPECT_EQ(r[8].test_id, "test_flat.py::test_xfail");
  EXPECT_EQ(r[8].cls, "");
  EXPECT_EQ(r[8].outcome, Outcome::kXfailed);
  EXPECT_EQ(r[8].message, "reason: known");
  EXPECT_EQ(r[9].outcome, Outcome::kSkipped);
  EXPECT_EQ(r[9].message, "test_flat.py:3: not here");  // no message attribute: the text

  EXPECT_EQ(r[10].test_id, "pkg/test_nested.py::TestOuter::TestInner::test_rerun");
  EXPECT_EQ(r[10].outcome, Outcome::kPassed);
  EXPECT_EQ(r[10].reruns, 2);
  EXPECT_TRUE(r[10].flaky);

  EXPECT_EQ(r[11].test_id, "test/test_torch.py::TestTorchDeviceTypeCPU::test_file_attr");
  EXPECT_EQ(r[11].outcome, Outcome::kError);
  EXPECT_EQ(r[11].message, "Timeout");
}

TEST(JunitIngest, MessagesKeepTheirFirst2000Characters) {
  std::string long_message;
  for (int i = 0; i < 1500; ++i) long_message += "é";  // two bytes each
  for (int i = 0; i < 1500; ++i) long_message += "x";
  std::string path = make_temp_dir() + "/long.xml";
  write_file(path, "<testsuite><testcase classname=\"t\" name=\"long\"><failure message=\"" +
                       long_message + "\"/></testcase></testsuite>");
  std::vector<TestResult> r = ingest(path, 64);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].message, truncate_utf8_chars(long_message, 2000));
  EXPECT_EQ(r[0].message.size(), 1500u * 2 + 500);
}

TEST(JunitIngest, ErrorsNameTheFileAndByteOffset) {
  std::string dir = make_temp_dir();
  std::string head = "<testsuite>\n<testcase classname=\"t\" name=\"ok\"/>\n";
  write_file(dir + "/bad.xml", head + "<testcase name=\"x\"><failure></testcase>\n</testsuite>\n");
  // Whatever the chunk size, the same byte of the file is blamed, and it is inside the bad case.
  std::string whole = error_of(dir + "/bad.xml");
  EXPECT_TRUE(whole.starts_with(dir + "/bad.xml: byte ")) << whole;
  EXPECT_NE(whole.find("invalid XML"), std::string::npos) << whole;
  size_t byte = std::stoul(whole.substr((dir + "/bad.xml: byte ").size()));
  EXPECT_GE(byte, head.size());
  EXPECT_EQ(error_of(dir + "/bad.xml", 5), whole);

  write_file(dir + "/cut.xml", head + "<testcase name=\"cut\"><failure message=\"m\">tra");
  EXPECT_EQ(error_of(dir + "/cut.xml", 3),
            fmt::format("{}/cut.xml: byte {}: file ends inside this <testcase>", dir, head.size()));

  write_file(dir + "/markup.xml", head + "</testsuite");
  EXPECT_EQ(error_of(dir + "/markup.xml"),
            fmt::format("{}/markup.xml: byte {}: file ends inside markup", dir, head.size()));

  write_file(dir + "/html.xml", "<html><body>not a report</body></html>");
  EXPECT_EQ(error_of(dir + "/html.xml"),
            dir + "/html.xml: not a JUnit XML report (root element <html>)");
  write_file(dir + "/empty.xml", "");
  EXPECT_EQ(error_of(dir + "/empty.xml"),
            dir + "/empty.xml: not a JUnit XML report (root element missing)");
  EXPECT_EQ(error_of(dir + "/missing.xml"),
            dir + "/missing.xml: cannot open: No such file or directory");
}

TEST(JunitIngest, AnEmptySuiteHasNoResults) {
  std::string path = make_temp_dir() + "/none.xml";
  write_file(path, "<?xml version=\"1.0\"?><testsuites><testsuite tests=\"0\"/></testsuites>");
  EXPECT_TRUE(ingest(path).empty());
}

TEST(JunitLocation, FromClassnameAndFile) {
  struct Case {
    std::string classname, file, want_file, want_cls;
  };
  for (const Case& c : std::vector<Case>{
           {"a.b.test_x.TestFooPRIVATEUSEONE", "", "a/b/test_x.py", "TestFooPRIVATEUSEONE"},
           {"tests.torch.test_basic", "", "tests/torch/test_basic.py", ""},
           {"test_flat", "", "test_flat.py", ""},
           {"pkg.test_x.TestOuter.TestInner", "", "pkg/test_x.py", "TestOuter::TestInner"},
           {"Pkg.test_x.TestA", "", "Pkg/test_x.py", "TestA"},
           // With a file attribute: it names the file, and tells where the module ends.
           {"TestTorchDeviceTypeCPU", "test_torch.py", "test_torch.py", "TestTorchDeviceTypeCPU"},
           {"tests.Upper.TestA", "tests/Upper.py", "tests/Upper.py", "TestA"},
           {"tests.Upper", "tests/Upper.py", "tests/Upper.py", ""},
           {"other.test_y.TestB", "test/test_y.py", "test/test_y.py", "TestB"},
           {"", "", "", ""},
       }) {
    JunitLocation got = junit_location(c.classname, c.file);
    EXPECT_EQ(got.file, c.want_file) << c.classname;
    EXPECT_EQ(got.cls, c.want_cls) << c.classname;
  }
}

TEST(JunitIngest, ErrorClassIsTheFirstExceptionLikeToken) {
  for (const auto& [message, want] : std::vector<std::pair<std::string, std::string>>{
           {"RuntimeError: boom", "RuntimeError"},
           {"failed on setup with \"ValueError: x\"", "ValueError"},
           {"torch.cuda.OutOfMemoryError: CUDA out of memory", "OutOfMemoryError"},
           {"Traceback\nE   KeyboardInterrupt\n", "KeyboardInterrupt"},
           {"NotImplementedError", "NotImplementedError"},
           {"a RuntimeError happened; later TypeError: t", "TypeError"},
           {"MyErrorish: no", ""},
           {"assert 1 == 2", ""},
           {"", ""},
       })
    EXPECT_EQ(error_class_in(message), want) << message;
}

TEST(JunitIngest, MessageCutNeverSplitsACharacter) {
  EXPECT_EQ(truncate_utf8_chars("héllo", 2), "hé");
  EXPECT_EQ(truncate_utf8_chars("héllo", 5), "héllo");
  EXPECT_EQ(truncate_utf8_chars("héllo", 50), "héllo");
  EXPECT_EQ(truncate_utf8_chars("😀😀😀", 2), "😀😀");
  EXPECT_EQ(truncate_utf8_chars("abc", 0), "");
}

}  // namespace
}  // namespace ootci
