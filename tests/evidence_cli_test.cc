// The real `ootci ingest|judge|shards` binary: what it prints and its exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

const std::string kRunId = "r-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}";

std::string tt_torch_report() {
  return fixture_path("junit/tt-torch.tests_torch.pytest-junit.xml");
}

TEST(EvidenceCli, IngestThenJudgeAFixtureReport) {
  std::string db = make_temp_dir() + "/ws/evidence.db";
  CliRun ingest = run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--backend", "tt"});
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_EQ(ingest.err, "");
  Lines out = split_lines(ingest.out);
  ASSERT_EQ(out.size(), 3u) << ingest.out;
  EXPECT_TRUE(std::regex_match(out[0], std::regex(kRunId))) << out[0];
  EXPECT_EQ(out[1],
            "250 results from 1 file: 37 passed, 0 failed, 0 error, 211 skipped, 2 xfailed, "
            "0 xpassed");
  EXPECT_EQ(out[2], "verdict: success");

  CliRun judge = run_ootci({"judge", "--run", out[0], "--evidence", db});
  EXPECT_EQ(judge.code, 0) << judge.err;
  EXPECT_EQ(split_lines(judge.out),
            (Lines{"run " + out[0] + ": backend tt, finished, 250 results", "verdict: success", "",
                   "mode       passed  failed  error  skipped  xfailed  xpassed  total",
                   "(unknown)      37       0      0      211        2        0    250",
                   "total          37       0      0      211        2        0    250"}));
}

TEST(EvidenceCli, HistoryListsATestsResultsNewestFirst) {
  std::string db = make_temp_dir() + "/evidence.db";
  ASSERT_EQ(run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", "r-1"}).code, 0);
  ASSERT_EQ(run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", "r-2"}).code, 0);
  CliRun h = run_ootci({"history", "tests/torch/test_basic.py::test_abs", "--evidence", db});
  ASSERT_EQ(h.code, 0) << h.err;
  Lines lines = split_lines(h.out);
  ASSERT_EQ(lines.size(), 2u) << h.out;  // one result per run
  for (const auto& line : lines) EXPECT_NE(line.find("  passed  "), std::string::npos) << line;
  EXPECT_EQ(split_lines(run_ootci({"history", "tests/torch/test_basic.py::test_abs", "--limit", "1",
                                   "--evidence", db})
                            .out)
                .size(),
            1u);
  CliRun none = run_ootci({"history", "no::such::test", "--evidence", db});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no results for no::such::test"), std::string::npos) << none.err;
}

TEST(EvidenceCli, AFailingReportJudgesAsFailureAgainstTheLastGreenRun) {
  std::string dir = make_temp_dir();
  std::string db = dir + "/evidence.db";
  ASSERT_EQ(run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", "r-green"}).code, 0);
  // The fixture with one of its passing tests now failing, another skipped test now erroring
  // (already failing in no green run either), and a strict xfail that passed.
  std::string report = read_file(tt_torch_report());
  report = std::regex_replace(
      report,
      std::regex(R"(<testcase classname="tests.torch.test_basic" name="test_abs" time="2.283" />)"),
      R"(<testcase classname="tests.torch.test_basic" name="test_abs" time="2.283"><failure message="RuntimeError: boom">trace</failure></testcase>)");
  ASSERT_NE(report.find("RuntimeError: boom"), std::string::npos);
  write_file(dir + "/red.xml", report);
  CliRun ingest = run_ootci({"ingest", dir + "/red.xml", "--evidence", db, "--run", "r-red"});
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_EQ(split_lines(ingest.out),
            (Lines{"r-red",
                   "250 results from 1 file: 36 passed, 1 failed, 0 error, 211 skipped, 2 xfailed, "
                   "0 xpassed",
                   "verdict: failure"}));

  CliRun judge = run_ootci({"judge", "--run", "r-red", "--evidence", db});
  EXPECT_EQ(judge.code, 1);
  EXPECT_EQ(judge.err, "");
  EXPECT_EQ(split_lines(judge.out),
            (Lines{"run r-red: backend unknown, finished, 250 results, last green run r-green",
                   "verdict: failure",
                   "  1 variant of mode mandatory_success (or unknown) failed or errored", "",
                   "mode       passed  failed  error  skipped  xfailed  xpassed  total",
                   "(unknown)      36       1      0      211        2        0    250",
                   "total          36       1      0      211        2        0    250", "",
                   "failing (1; 1 new since the last green run):",
                   "  new  failed  tests/torch/test_basic.py::test_abs  [unknown mode]  "
                   "RuntimeError: boom"}));
  // The green run is still green.
  EXPECT_EQ(run_ootci({"judge", "--run", "r-green", "--evidence", db}).code, 0);
}

TEST(EvidenceCli, JudgeRefusesUnknownRunsAndMissingDatabases) {
  std::string dir = make_temp_dir();
  ASSERT_EQ(run_ootci({"ingest", tt_torch_report(), "--evidence", dir + "/e.db"}).code, 0);
  CliRun r = run_ootci({"judge", "--run", "r-nope", "--evidence", dir + "/e.db"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: run r-nope not found in " + dir + "/e.db\n");
  r = run_ootci({"judge", "--run", "r-nope", "--evidence", dir + "/none.db"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: no evidence database at " + dir + "/none.db\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/none.db"));
  EXPECT_EQ(run_ootci({"judge"}).code, 2);
}

// Issue 41: `ootci select wave2 -o` writes the decision ingest keeps in the merged run's
// manifest; a file that is not one is refused before any run is made, naming file and field.
TEST(EvidenceCli, IngestKeepsAWave2DecisionAndRefusesABadOne) {
  std::string dir = make_temp_dir();
  std::string db = dir + "/e.db";
  auto ingest = [&](const std::string& stage, const std::string& run) {
    write_file(dir + "/stage.json", stage);
    return run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", run, "--second-stage",
                      dir + "/stage.json"});
  };
  CliRun bad = ingest(R"({"tests": ["a::b"], "ran": "yes", "why": "x"})", "r-bad");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "error: " + dir + "/stage.json: \"ran\" must be true or false\n");
  bad = ingest(R"({"tests": "a::b", "ran": true, "why": "x"})", "r-bad");
  EXPECT_EQ(bad.err, "error: " + dir + "/stage.json: \"tests\" must be a list of test ids\n");
  bad = ingest("[]", "r-bad");
  EXPECT_NE(bad.err.find("stage.json: not a JSON object"), std::string::npos) << bad.err;
  // Refused before the run began: the run id is still free.
  CliRun good =
      ingest(R"({"tests": ["a::b"], "ran": false, "why": "no first-stage test failed"})", "r-bad");
  EXPECT_EQ(good.code, 0) << good.err;
  CliRun page =
      run_ootci({"report", "html", "--run", "r-bad", "--evidence", db, "--out", dir + "/page"});
  ASSERT_EQ(page.code, 0) << page.err;
  EXPECT_NE(
      read_file(dir + "/page/report.html")
          .find("data-ran=\"false\">Wave 2 (1 test) did not run: no first-stage test failed."),
      std::string::npos);
}

TEST(EvidenceCli, IngestRefusesAnExistingRunAndKeepsABrokenReportAsInterrupted) {
  std::string dir = make_temp_dir();
  std::string db = dir + "/e.db";
  ASSERT_EQ(run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", "r-1"}).code, 0);
  CliRun again = run_ootci({"ingest", tt_torch_report(), "--evidence", db, "--run", "r-1"});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.err, "error: run r-1 already exists in " + db + "\n");

  write_file(dir + "/cut.xml", "<testsuite>\n<testcase classname=\"t\" name=\"a\"/>\n<testcase");
  CliRun cut = run_ootci({"ingest", dir + "/cut.xml", "--evidence", db, "--run", "r-2"});
  EXPECT_EQ(cut.code, 1);
  EXPECT_EQ(cut.err, "error: " + dir +
                         "/cut.xml: byte 47: file ends inside markup (run r-2 kept as "
                         "interrupted, 1 results)\n");
  CliRun judge = run_ootci({"judge", "--run", "r-2", "--evidence", db});
  EXPECT_EQ(judge.code, 1);
  EXPECT_NE(judge.out.find("  the run is interrupted, not finished\n"), std::string::npos)
      << judge.out;
}

// A backend folder with ootci.yaml whose one config takes four test files of a fake torch tree.
class EvidenceCliShards : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(make_temp_dir()).string();
    std::filesystem::create_directories(root_ + "/torch/test");
    std::filesystem::create_directories(root_ + "/backend/configs");
    for (const char* f : {"a", "b", "c", "d"})
      write_file(root_ + "/torch/test/test_" + f + ".py", "def test_x(): pass\n");
    write_file(root_ + "/backend/configs/all.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_*.py
      unlisted_test_mode: mandatory_success
)");
    config_ = root_ + "/backend/ootci.yaml";
    write_file(config_, R"(backend:
  name: reference
  device_type: privateuseone
upstream:
  torch_root: ${FAKE_TORCH}
test_configs: [configs/*.yaml]
)");
    env_ = {{"FAKE_TORCH", root_ + "/torch"}};
    // History for test_a (16 s over two tests) and test_b (4 s), in the workspace's evidence.
    write_file(root_ + "/history.xml", R"(<testsuites><testsuite>
<testcase classname="test.test_a.TestA" name="test_1" time="10"/>
<testcase classname="test.test_a.TestA" name="test_2" time="6"/>
<testcase classname="test.test_b" name="test_1" time="3"/>
<testcase classname="test.test_b" name="test_2" time="1"/>
</testsuite></testsuites>
)");
  }
  CliRun ootci(const Lines& args) { return run_ootci(args, env_); }

  std::string root_, config_;
  std::map<std::string, std::string> env_;
};

TEST_F(EvidenceCliShards, MatrixByFileWithAndWithoutHistory) {
  // No evidence yet: round-robin by name, and no database is created.
  CliRun r = ootci({"shards", "--config", config_, "--count", "3", "--matrix"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/backend/.ootci/evidence.db"));
  EXPECT_EQ(json::parse(r.out), json::parse(R"({"include": [
      {"shard": 1, "shards": 3, "files": ["test/test_a.py", "test/test_d.py"], "expected_s": 0.0},
      {"shard": 2, "shards": 3, "files": ["test/test_b.py"], "expected_s": 0.0},
      {"shard": 3, "shards": 3, "files": ["test/test_c.py"], "expected_s": 0.0}]})"));
  EXPECT_TRUE(r.out.starts_with(R"({"include":[{"shard":1,"shards":3,"files":[)")) << r.out;

  CliRun ingest = ootci({"ingest", root_ + "/history.xml", "--config", config_});
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  ASSERT_TRUE(std::filesystem::exists(root_ + "/backend/.ootci/evidence.db"));
  r = ootci({"shards", "--config", config_, "--count", "2", "--matrix"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"({"include": [
      {"shard": 1, "shards": 2, "files": ["test/test_a.py", "test/test_d.py"], "expected_s": 16.0},
      {"shard": 2, "shards": 2, "files": ["test/test_b.py", "test/test_c.py"], "expected_s": 4.0}]})"));

  r = ootci({"shards", "--config", config_, "--count", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out),
            (Lines{"shard 1/2: 16 s expected, 2 units (1 without history)", "  test/test_a.py",
                   "  test/test_d.py", "shard 2/2: 4 s expected, 2 units (1 without history)",
                   "  test/test_b.py", "  test/test_c.py"}));
}

TEST_F(EvidenceCliShards, MatrixByTestSplitsFilesWithHistory) {
  ASSERT_EQ(ootci({"ingest", root_ + "/history.xml", "--config", config_}).code, 0);
  CliRun r = ootci({"shards", "--config", config_, "--count", "2", "--matrix", "--by", "test"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"({"include": [
      {"shard": 1, "shards": 2, "files": ["test/test_a.py", "test/test_c.py"], "expected_s": 10.0,
       "tests": ["test/test_a.py::TestA::test_1"]},
      {"shard": 2, "shards": 2, "files": ["test/test_a.py", "test/test_b.py", "test/test_d.py"],
       "expected_s": 10.0,
       "tests": ["test/test_a.py::TestA::test_2", "test/test_b.py::test_1", "test/test_b.py::test_2"]}]})"));
}

TEST_F(EvidenceCliShards, UsageAndPlanErrors) {
  EXPECT_EQ(ootci({"shards", "--config", config_, "--count", "0"}).code, 2);
  EXPECT_EQ(ootci({"shards", "--config", config_, "--count", "2", "--by", "class"}).code, 2);
  EXPECT_EQ(ootci({"shards", "--count", "2"}).code, 2);
  write_file(root_ + "/backend/configs/bad.yaml",
             "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_nope.py\n");
  CliRun r = ootci({"shards", "--config", config_, "--count", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(split_lines(r.err),
            Lines{root_ +
                  "/backend/configs/bad.yaml:3:13: test_suite_config.files[0].path: no file "
                  "matches '" +
                  root_ + "/torch/test/test_nope.py'"});
}

}  // namespace
}  // namespace ootci
