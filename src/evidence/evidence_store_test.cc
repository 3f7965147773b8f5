#include "evidence/evidence_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

TestResult result(const std::string& test_id, const std::string& outcome, double duration_s = 1,
                  int64_t finished_ms = 1000) {
  TestResult t;
  t.test_id = test_id;
  t.file = test_id.substr(0, test_id.find("::"));
  t.name = test_id.substr(test_id.rfind("::") + 2);
  t.outcome = *parse_outcome(outcome);
  t.duration_s = duration_s;
  t.finished_ms = finished_ms;
  return t;
}

RunInfo run_info(const std::string& id, int64_t started_ms, const std::string& backend = "ref",
                 const std::string& config_hash = "h1") {
  RunInfo r;
  r.id = id;
  r.backend = backend;
  r.config_hash = config_hash;
  r.status = RunStatus::kRunning;
  r.started_ms = started_ms;
  return r;
}

void expect_same(const TestResult& a, const TestResult& b) {
  EXPECT_EQ(a.test_id, b.test_id);
  EXPECT_EQ(a.file, b.file);
  EXPECT_EQ(a.cls, b.cls);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_DOUBLE_EQ(a.duration_s, b.duration_s);
  EXPECT_EQ(a.error_class, b.error_class);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.reruns, b.reruns);
  EXPECT_EQ(a.flaky, b.flaky);
  EXPECT_EQ(a.finished_ms, b.finished_ms);
  EXPECT_EQ(a.base, b.base);
}

class EvidenceTest : public ::testing::Test {
 protected:
  // A folder that does not exist yet: open creates it.
  std::string path_ = make_temp_dir() + "/ws/evidence.db";
  std::unique_ptr<EvidenceStore> store_ = EvidenceStore::open(path_);

  // A finished run holding `results`.
  void finished_run(const std::string& id, int64_t started_ms, std::vector<TestResult> results,
                    const std::string& verdict = "success", const std::string& backend = "ref",
                    const std::string& config_hash = "h1") {
    store_->begin_run(run_info(id, started_ms, backend, config_hash));
    store_->record_batch(id, results);
    store_->finish_run(id, started_ms + 10, RunStatus::kFinished, parse_conclusion(verdict),
                       {{"run_id", id}});
  }

  // Closes the store, runs `sql` on its file (to make it look like an older schema), and opens
  // it again, which migrates it.
  void reopen_after(const char* sql) {
    store_.reset();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
    store_ = EvidenceStore::open(path_);
  }
};

TEST_F(EvidenceTest, RoundTripsEveryField) {
  RunInfo run = run_info("r-1", 1234);
  run.shard = "2/4";
  run.manifest = {{"run_id", "r-1"}, {"upstream", {{"torch_version", "1.13.1"}}}};
  store_->begin_run(run);
  TestResult t;
  t.test_id = "test/test_view_ops.py::TestViewOpsPRIVATEUSEONE::test_view_float32";
  t.file = "test/test_view_ops.py";
  t.cls = "TestViewOpsPRIVATEUSEONE";
  t.name = "test_view_float32";
  t.device = "privateuseone";
  t.dtype = "float32,int64";
  t.op = "view";
  t.mode = TestMode::kXfailStrict;
  t.outcome = Outcome::kFailed;
  t.duration_s = 0.125;
  t.error_class = "XPASS(strict)";
  t.message = "unicode ✓ and 'quotes' \"too\"\nsecond line";
  t.reruns = 2;
  t.flaky = true;
  t.finished_ms = 98765;
  store_->record("r-1", t);

  std::optional<RunInfo> got = store_->run("r-1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, "r-1");
  EXPECT_EQ(got->backend, "ref");
  EXPECT_EQ(got->config_hash, "h1");
  EXPECT_EQ(got->shard, "2/4");
  EXPECT_EQ(got->status, RunStatus::kRunning);
  EXPECT_EQ(got->verdict, std::nullopt);
  EXPECT_EQ(got->started_ms, 1234);
  EXPECT_EQ(got->ended_ms, 0);
  EXPECT_EQ(got->manifest, run.manifest);
  std::vector<TestResult> results = store_->results("r-1");
  ASSERT_EQ(results.size(), 1u);
  expect_same(results[0], t);

  nlohmann::json final_manifest = {{"run_id", "r-1"}, {"ended", "2026-11-29T19:20:00Z"}};
  store_->finish_run("r-1", 5678, RunStatus::kFinished, Conclusion::kFailure, final_manifest);
  got = store_->run("r-1");
  EXPECT_EQ(got->status, RunStatus::kFinished);
  EXPECT_EQ(got->verdict, Conclusion::kFailure);
  EXPECT_EQ(got->ended_ms, 5678);
  EXPECT_EQ(got->manifest, final_manifest);
  EXPECT_FALSE(store_->run("r-nope"));
}

TEST_F(EvidenceTest, UnsetShardAndVerdictAreStoredAsNull) {
  store_->begin_run(run_info("r-1", 1));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT shard IS NULL, verdict IS NULL, ended_ms IS NULL FROM runs", -1,
                     &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1);
  EXPECT_EQ(sqlite3_column_int(s, 1), 1);
  EXPECT_EQ(sqlite3_column_int(s, 2), 1);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_F(EvidenceTest, RecordingATestAgainReplacesIt) {
  store_->begin_run(run_info("r-1", 1));
  store_->record("r-1", result("a.py::t", "failed", 1.0));
  TestResult again = result("a.py::t", "passed", 2.0);
  again.reruns = 1;
  again.flaky = true;
  store_->record("r-1", again);
  store_->record_batch("r-1", {result("a.py::u", "passed"), result("a.py::u", "skipped")});
  std::vector<TestResult> got = store_->results("r-1");
  ASSERT_EQ(got.size(), 2u);
  expect_same(got[0], again);
  EXPECT_EQ(got[1].outcome, Outcome::kSkipped);
}

TEST_F(EvidenceTest, ResultsNeedAnExistingRun) {
  try {
    store_->record("r-missing", result("a.py::t", "passed"));
    FAIL() << "recorded into a run that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path_ + ": record a.py::t in run r-missing"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(store_->finish_run("r-missing", 1, RunStatus::kFinished, Conclusion::kSuccess, {}),
               Error);
}

TEST_F(EvidenceTest, ABatchIsAllOrNothing) {
  store_->begin_run(run_info("r-1", 1));
  // A trigger stands in for whatever can go wrong half way through a batch.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TRIGGER refuse BEFORE INSERT ON results WHEN NEW.test_id = "
                         "'a.py::bad' BEGIN SELECT RAISE(ABORT, 'refused'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THROW(
      store_->record_batch("r-1", {result("a.py::good", "passed"), result("a.py::bad", "passed")}),
      Error);
  EXPECT_TRUE(store_->results("r-1").empty());
  store_->record_batch("r-1", {result("a.py::good", "passed")});  // the store is still usable
  EXPECT_EQ(store_->results("r-1").size(), 1u);
}

// A stored verdict this ootci does not know stops the read with the run named, not a guess.
TEST_F(EvidenceTest, AnUnknownStoredVerdictIsAnErrorNamingTheRun) {
  store_->begin_run(run_info("r-1", 1));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET verdict = 'greenish' WHERE id = 'r-1'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(error_of([&] { store_->run("r-1"); }),
            "run r-1: verdict: conclusion 'greenish' is not one of success, failure, cancelled, "
            "timed_out, neutral, skipped, action_required, stale");
}

TEST_F(EvidenceTest, FinishedTestsAreTheIdsRecordedInThatRun) {
  store_->begin_run(run_info("r-1", 1));
  store_->begin_run(run_info("r-2", 2));
  store_->record("r-1", result("a.py::t", "passed"));
  store_->record("r-1", result("a.py::C::u", "error"));
  store_->record("r-2", result("b.py::v", "passed"));
  EXPECT_EQ(store_->finished_tests("r-1"), (std::set<std::string>{"a.py::C::u", "a.py::t"}));
  EXPECT_EQ(store_->finished_tests("r-3"), std::set<std::string>{});
}

TEST_F(EvidenceTest, BeginningARunAgainResumesItAndKeepsItsResults) {
  store_->begin_run(run_info("r-1", 100));
  store_->record("r-1", result("a.py::t", "passed"));
  store_->finish_run("r-1", 150, RunStatus::kInterrupted, std::nullopt, {});
  store_->begin_run(run_info("r-1", 200));
  std::optional<RunInfo> got = store_->run("r-1");
  EXPECT_EQ(got->status, RunStatus::kRunning);
  EXPECT_EQ(got->started_ms, 100);
  EXPECT_EQ(got->ended_ms, 0);
  EXPECT_EQ(store_->finished_tests("r-1"), std::set<std::string>{"a.py::t"});
}

TEST_F(EvidenceTest, RunsAreListedNewestFirst) {
  store_->begin_run(run_info("r-a", 300));
  store_->begin_run(run_info("r-b", 100, "other"));
  store_->begin_run(run_info("r-c", 200));
  std::vector<std::string> ids;
  for (const auto& r : store_->runs("ref")) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"r-a", "r-c"}));
  EXPECT_EQ(store_->runs("").size(), 3u);
}

TEST_F(EvidenceTest, LastGreenRunIsTheNewestFinishedSuccessForBackendAndConfig) {
  EXPECT_FALSE(store_->last_green_run("ref", "h1"));
  finished_run("r-old-green", 100, {});
  finished_run("r-green", 200, {});
  finished_run("r-red", 300, {}, "failure");
  finished_run("r-other-config", 400, {}, "success", "ref", "h2");
  finished_run("r-other-backend", 500, {}, "success", "other", "h1");
  RunInfo interrupted = run_info("r-interrupted", 600);
  store_->begin_run(interrupted);
  store_->finish_run("r-interrupted", 610, RunStatus::kInterrupted, Conclusion::kSuccess, {});
  store_->begin_run(run_info("r-running", 700));

  std::optional<RunInfo> green = store_->last_green_run("ref", "h1");
  ASSERT_TRUE(green);
  EXPECT_EQ(green->id, "r-green");
  EXPECT_EQ(store_->last_green_run("ref", "h2")->id, "r-other-config");
  EXPECT_FALSE(store_->last_green_run("ref", "h3"));
}

TEST_F(EvidenceTest, HistoryIsNewestFirstAndLimited) {
  finished_run("r-1", 100, {result("a.py::t", "passed", 1, 1100)});
  finished_run("r-2", 200, {result("a.py::t", "failed", 2, 2100), result("a.py::u", "passed")});
  finished_run("r-3", 300, {result("a.py::t", "error", 3, 3100)});
  std::vector<TestResult> h = store_->history("a.py::t", 10);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].outcome, Outcome::kError);
  EXPECT_EQ(h[1].outcome, Outcome::kFailed);
  EXPECT_EQ(h[2].outcome, Outcome::kPassed);
  h = store_->history("a.py::t", 2);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].finished_ms, 2100);
  EXPECT_TRUE(store_->history("a.py::none", 5).empty());
}

TEST_F(EvidenceTest, FileOutcomesCountEachOutcomeAndSumDurationsPerFileOfOneRun) {
  finished_run("r-1", 100,
               {result("a.py::t", "passed", 1), result("a.py::u", "failed", 2),
                result("a.py::v", "passed", 3), result("b.py::t", "error", 4)});
  finished_run("r-2", 200, {result("a.py::t", "failed", 10)});
  std::map<std::string, FileOutcomes> f = store_->file_outcomes("r-1");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f["a.py"].counts,
            (std::map<Outcome, int>{{Outcome::kFailed, 1}, {Outcome::kPassed, 2}}));
  EXPECT_DOUBLE_EQ(f["a.py"].seconds, 6);
  EXPECT_EQ(f["b.py"].counts, (std::map<Outcome, int>{{Outcome::kError, 1}}));
  EXPECT_EQ(store_->file_outcomes("r-2")["a.py"].counts.at(Outcome::kFailed), 1);
  EXPECT_TRUE(store_->file_outcomes("r-none").empty());
}

TEST_F(EvidenceTest, DurationsAreMeansOverTheLastResultsInFinishedRuns) {
  // a.py::t over six finished runs: 100 (oldest, outside a window of 5), then 1..5.
  finished_run("r-0", 10, {result("a.py::t", "passed", 100, 10)});
  for (int i = 1; i <= 5; ++i)
    finished_run("r-" + std::to_string(i), i * 100,
                 {result("a.py::t", "passed", i, i * 100), result("a.py::C::u", "failed", 10, i)},
                 i % 2 ? "success" : "failure");
  // Results of runs that did not finish do not count.
  store_->begin_run(run_info("r-running", 1000));
  store_->record("r-running", result("a.py::t", "passed", 1000, 5000));
  store_->record("r-running", result("b.py::only_running", "passed", 7, 5000));
  store_->begin_run(run_info("r-killed", 2000));
  store_->record("r-killed", result("b.py::v", "passed", 9, 6000));
  store_->finish_run("r-killed", 2100, RunStatus::kInterrupted, std::nullopt, {});
  finished_run("r-b", 3000, {result("b.py::w", "skipped", 0.5, 7000)});

  std::map<std::string, double> tests = store_->test_durations(5);
  EXPECT_EQ(tests,
            (std::map<std::string, double>{{"a.py::C::u", 10}, {"a.py::t", 3}, {"b.py::w", 0.5}}));
  EXPECT_DOUBLE_EQ(store_->test_durations(2)["a.py::t"], 4.5);
  EXPECT_DOUBLE_EQ(store_->test_durations(6)["a.py::t"], (100 + 15) / 6.0);
  EXPECT_EQ(store_->file_durations(5),
            (std::map<std::string, double>{{"a.py", 13}, {"b.py", 0.5}}));
}

// Shard runs must not move tests between shards of the same matrix: while a test has results
// from whole runs, its duration comes from those alone.
TEST_F(EvidenceTest, BreakagesCountPassesFollowedByFailuresInTheWindow) {
  finished_run("r-1", 100,
               {result("a.py::flip", "passed"), result("a.py::always", "failed"),
                result("a.py::once", "passed")});
  finished_run("r-2", 200,
               {result("a.py::flip", "failed"), result("a.py::always", "failed"),
                result("a.py::once", "error")});
  finished_run("r-3", 300,
               {result("a.py::flip", "passed"), result("a.py::always", "failed"),
                result("a.py::once", "passed")});
  finished_run("r-4", 400, {result("a.py::flip", "failed")});
  auto all = store_->breakages(20);
  EXPECT_EQ(all, (std::map<std::string, int>{{"a.py::flip", 2}, {"a.py::once", 1}}));
  // The window holds each test's newest results: flip's last two, once's last two.
  EXPECT_EQ(store_->breakages(2), (std::map<std::string, int>{{"a.py::flip", 1}}));
}

TEST_F(EvidenceTest, DurationsPreferWholeRunsOverShardRuns) {
  finished_run("r-whole", 100, {result("a.py::t", "passed", 2, 100)});
  RunInfo shard = run_info("r-shard", 200);
  shard.shard = "1/2";
  store_->begin_run(shard);
  store_->record("r-shard", result("a.py::t", "passed", 50, 300));
  store_->record("r-shard", result("b.py::u", "passed", 7, 300));
  store_->finish_run("r-shard", 400, RunStatus::kFinished, Conclusion::kSuccess, {});
  EXPECT_EQ(store_->test_durations(5),
            (std::map<std::string, double>{{"a.py::t", 2}, {"b.py::u", 7}}));
}

// A hang's or a crash's recorded time says how long the runner waited, not how long the test
// takes: the test limits leave such results out, so a timeout does not raise its own next limit.
TEST_F(EvidenceTest, CompletedDurationsLeaveOutErrorsAndSkips) {
  finished_run("r-1", 100,
               {result("a.py::t", "passed", 2, 100), result("a.py::hung", "error", 120, 100),
                result("a.py::s", "skipped", 0, 100), result("a.py::f", "failed", 4, 100)});
  finished_run("r-2", 200, {result("a.py::t", "error", 900, 200)});
  EXPECT_EQ(store_->completed_durations(5),
            (std::map<std::string, double>{{"a.py::f", 4}, {"a.py::t", 2}}));
  EXPECT_DOUBLE_EQ(store_->test_durations(5)["a.py::t"], 451);
}

TEST_F(EvidenceTest, DataSurvivesClosingAndReopening) {
  finished_run("r-1", 100, {result("a.py::t", "failed", 2)}, "failure");
  store_.reset();
  store_ = EvidenceStore::open(path_);
  EXPECT_EQ(store_->run("r-1")->verdict, Conclusion::kFailure);
  ASSERT_EQ(store_->results("r-1").size(), 1u);
  EXPECT_EQ(store_->results("r-1")[0].outcome, Outcome::kFailed);
}

TEST_F(EvidenceTest, RecordsTheSchemaVersionAndRefusesANewerOne) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 4);
  sqlite3_finalize(s);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    EvidenceStore::open(path_);
    FAIL() << "opened a database from a newer ootci";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path_ + ": evidence schema version 99 is newer than this ootci (4)");
  }
}

// An evidence store written before the SQL layer: schema version 1, recorded in a `meta` row
// (the text of version 1 as it shipped).
TEST(EvidenceUpgrade, AVersionOneStoreWithAMetaRowUpgradesInPlace) {
  std::string path = make_temp_dir() + "/old.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, R"sql(
CREATE TABLE runs (id TEXT PRIMARY KEY, backend TEXT NOT NULL, config_hash TEXT NOT NULL,
  shard TEXT, status TEXT NOT NULL, verdict TEXT, started_ms INTEGER NOT NULL, ended_ms INTEGER,
  manifest TEXT NOT NULL);
CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(id), test_id TEXT NOT NULL,
  file TEXT NOT NULL, class TEXT NOT NULL, name TEXT NOT NULL, device TEXT NOT NULL,
  dtype TEXT NOT NULL, op TEXT NOT NULL, mode TEXT NOT NULL, outcome TEXT NOT NULL,
  duration_s REAL NOT NULL, error_class TEXT NOT NULL, message TEXT NOT NULL,
  reruns INTEGER NOT NULL, flaky INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  PRIMARY KEY (run_id, test_id));
CREATE INDEX results_by_test ON results(test_id, finished_ms);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO runs VALUES ('old', 'ref', 'h1', NULL, 'finished', 'success', 10, 20, '{}');
INSERT INTO results VALUES ('old', 'a.py::t', 'a.py', '', 't', '', '', '', '', 'passed', 1.5,
  '', '', 0, 0, 20);
)sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  auto store = EvidenceStore::open(path);
  ASSERT_EQ(store->results("old").size(), 1u);
  EXPECT_EQ(store->results("old")[0].duration_s, 1.5);
  EXPECT_EQ(store->results("old")[0].base, "");  // version 2's column, with its default
  EXPECT_EQ(store->last_green_run("ref", "h1")->id, "old");
  // Version 2's tables work.
  TestResult with_ops = result("a.py::u", "passed");
  with_ops.ops = {"aten::add.Tensor"};
  store->record("old", with_ops);
  EXPECT_EQ(store->ops_of_run("old").at("a.py::u"), std::vector<std::string>{"aten::add.Tensor"});
  store.reset();
  // Opening again runs nothing: the version now lives in schema_version.
  store = EvidenceStore::open(path);
  EXPECT_EQ(store->results("old").size(), 2u);
}

TEST_F(EvidenceTest, OpsAndBaseNamesAreStoredWithTheResultAndForgottenWithIt) {
  store_->begin_run(run_info("r-1", 100));
  TestResult a = result("a.py::C::test_add_privateuseone_float32", "passed");
  a.base = "TestC::test_add";
  a.ops = {"aten::add.Tensor", "aten::empty.memory_format"};
  TestResult b = result("a.py::C::test_mul_privateuseone", "failed");
  b.base = "TestC::test_mul";
  store_->record("r-1", a);
  store_->record_batch("r-1", {b, result("a.py::C::test_sub", "passed")});
  auto ops = store_->ops_of_run("r-1");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[a.test_id], a.ops);
  EXPECT_EQ(store_->results("r-1")[0].base, "TestC::test_add");
  store_->forget("r-1", a.test_id);
  EXPECT_TRUE(store_->ops_of_run("r-1").empty());
}

TEST_F(EvidenceTest, OpDtypesAreStoredWithTheOps) {
  store_->begin_run(run_info("r-1", 100));
  TestResult a = result("a.py::C::test_add_privateuseone_float32", "passed");
  a.ops = {"aten::add.Tensor", "aten::index_put_"};
  a.op_dtypes = {"aten::add.Tensor:float32", "aten::index_put_:float32", "aten::index_put_:int64"};
  a.input_op_dtypes = {"aten::add.Tensor:float32"};
  TestResult b = result("a.py::C::test_sub", "passed");
  b.ops = {"aten::sub.Tensor"};  // recorded without dtypes
  store_->record_batch("r-1", {a, b});
  auto pairs = store_->op_dtypes_of_run("r-1");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[a.test_id], a.op_dtypes);
  EXPECT_EQ(store_->input_op_dtypes_of_run("r-1"),
            (std::map<std::string, std::vector<std::string>>{{a.test_id, a.input_op_dtypes}}));
  EXPECT_EQ(store_->ops_of_run("r-1").size(), 2u);
}

// Ops recorded by schema 2 keep their ops and gain an empty dtype list: dtypes unknown.
TEST_F(EvidenceTest, MigratesAVersionTwoDatabaseKeepingItsOps) {
  store_->begin_run(run_info("r-1", 100));
  TestResult a = result("a.py::t", "passed");
  a.ops = {"aten::add.Tensor"};
  store_->record("r-1", a);
  reopen_after(
      "ALTER TABLE test_ops DROP COLUMN op_dtypes; "
      "ALTER TABLE test_ops DROP COLUMN input_op_dtypes; "
      "ALTER TABLE test_ops DROP COLUMN input_probe; "
      "UPDATE schema_version SET version = 2");
  EXPECT_EQ(store_->ops_of_run("r-1").at("a.py::t"), a.ops);
  EXPECT_TRUE(store_->op_dtypes_of_run("r-1").empty());
  TestResult b = result("a.py::u", "passed");
  b.ops = {"aten::mul.Tensor"};
  b.op_dtypes = {"aten::mul.Tensor:float64"};
  store_->record("r-1", b);
  EXPECT_EQ(store_->op_dtypes_of_run("r-1").at("a.py::u"), b.op_dtypes);
}

TEST_F(EvidenceTest, InputProbesAreKeptPerTestWithItsOps) {
  store_->begin_run(run_info("r-1", 100));
  TestResult a = result("a.py::C::test_sum_complex64", "passed");
  a.ops = {"aten::sum"};
  TestResult b = result("a.py::C::test_sum_float32", "passed");
  b.ops = {"aten::sum"};
  store_->record_batch("r-1", {a, b, result("a.py::C::test_none", "passed")});
  EXPECT_TRUE(store_->input_probes_of_run("r-1").empty());
  store_->set_input_probes("r-1", {{a.test_id, "inputs shifted by 0.25: AssertionError"},
                                   {b.test_id, "held: 8 shifts"},
                                   {"a.py::C::test_none", "held: 8 shifts"}});
  EXPECT_EQ(store_->input_probes_of_run("r-1"),
            (std::map<std::string, std::string>{
                {a.test_id, "inputs shifted by 0.25: AssertionError"},
                {b.test_id, "held: 8 shifts"}}));  // a test without ops has no row to probe
  EXPECT_EQ(store_->ops_of_run("r-1").at(a.test_id), a.ops);
}

// Evidence of schema 3 keeps its ops and dtypes and reads as never probed.
TEST_F(EvidenceTest, MigratesAVersionThreeDatabaseAsNeverProbed) {
  store_->begin_run(run_info("r-1", 100));
  TestResult a = result("a.py::t", "passed");
  a.ops = {"aten::add.Tensor"};
  a.op_dtypes = {"aten::add.Tensor:float32"};
  store_->record("r-1", a);
  reopen_after(
      "ALTER TABLE test_ops DROP COLUMN input_probe; "
      "UPDATE schema_version SET version = 3");
  EXPECT_EQ(store_->op_dtypes_of_run("r-1").at("a.py::t"), a.op_dtypes);
  EXPECT_TRUE(store_->input_probes_of_run("r-1").empty());
  store_->set_input_probes("r-1", {{"a.py::t", "held: 8 shifts"}});
  EXPECT_EQ(store_->input_probes_of_run("r-1").at("a.py::t"), "held: 8 shifts");
}

TEST_F(EvidenceTest, ABatchMixingResultsWithAndWithoutOpsKeepsEveryRow) {
  store_->begin_run(run_info("r-1", 100));
  std::vector<TestResult> batch;
  for (int i = 0; i < 6; ++i) {
    TestResult r = result("a.py::C::t" + std::to_string(i), "passed");
    if (i % 3 != 0) r.ops = {"aten::op" + std::to_string(i)};
    batch.push_back(r);
  }
  store_->record_batch("r-1", batch);
  EXPECT_EQ(store_->results("r-1").size(), 6u);
  EXPECT_EQ(store_->ops_of_run("r-1").size(), 4u);
}

TEST_F(EvidenceTest, DeletingARunRemovesItsResultsAndOps) {
  store_->begin_run(run_info("r-1", 100));
  store_->begin_run(run_info("r-2", 200));
  TestResult a = result("a.py::t", "passed");
  a.ops = {"aten::add.Tensor"};
  store_->record("r-1", a);
  store_->record("r-2", a);
  store_->delete_run("r-1");
  EXPECT_FALSE(store_->run("r-1"));
  EXPECT_TRUE(store_->results("r-1").empty());
  EXPECT_TRUE(store_->ops_of_run("r-1").empty());
  EXPECT_EQ(store_->ops_of_run("r-2").size(), 1u);
  EXPECT_EQ(store_->history("a.py::t", 10).size(), 1u);
}

TEST_F(EvidenceTest, DiscoveriesAreKeyedByFileContentAndBackendRevision) {
  finished_run("r-1", 100, {});
  finished_run("r-2", 200, {});
  store_->mark_discovered({"test/a.py", "h-old", "rev1", "r-1", 100});
  store_->mark_discovered({"test/a.py", "h-new", "rev1", "r-2", 200});
  store_->mark_discovered({"test/b.py", "h-b", "rev1", "r-1", 100});
  EXPECT_EQ(store_->discovered("test/a.py", "h-old", "rev1")->run_id, "r-1");
  EXPECT_FALSE(store_->discovered("test/a.py", "h-old", "rev2"));
  auto latest = store_->latest_discoveries();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].relpath, "test/a.py");
  EXPECT_EQ(latest[0].run_id, "r-2");
  EXPECT_EQ(latest[1].relpath, "test/b.py");
}

// A database written by the first schema gains the new column and tables in place.
TEST_F(EvidenceTest, MigratesAVersionOneDatabase) {
  finished_run("r-1", 100, {result("a.py::t", "passed")});
  reopen_after(
      "DROP TABLE test_ops; DROP TABLE discovered_files; "
      "ALTER TABLE results DROP COLUMN base; "
      "UPDATE schema_version SET version = 1");
  EXPECT_EQ(store_->results("r-1").size(), 1u);
  EXPECT_EQ(store_->results("r-1")[0].base, "");
  store_->mark_discovered({"a.py", "h", "rev", "r-1", 1});
  EXPECT_TRUE(store_->discovered("a.py", "h", "rev"));
}

// Two connections on one file (a runner and an ingest in one process), writing at the same time.
TEST_F(EvidenceTest, TwoStoresOnOneFileCanBothWrite) {
  auto other = EvidenceStore::open(path_);
  store_->begin_run(run_info("r-a", 1));
  other->begin_run(run_info("r-b", 2));
  constexpr int kPerRun = 200;
  auto writer = [](EvidenceStore& s, const std::string& run) {
    for (int i = 0; i < kPerRun; ++i)
      s.record(run, result("a.py::t" + std::to_string(i), "passed", i, i));
  };
  std::thread a(writer, std::ref(*store_), "r-a");
  std::thread b(writer, std::ref(*other), "r-b");
  a.join();
  b.join();
  other->record_batch("r-a", {result("z.py::from_other", "passed")});
  EXPECT_EQ(store_->finished_tests("r-a").size(), kPerRun + 1u);
  EXPECT_EQ(store_->finished_tests("r-b").size(), size_t{kPerRun});
  EXPECT_EQ(other->results("r-a").size(), kPerRun + 1u);
}

// Two processes (shards of one machine) writing to one file at the same time.
TEST_F(EvidenceTest, TwoProcessesCanWriteAtOnce) {
  constexpr int kPerRun = 300;
  auto write_run = [&](const std::string& run) {
    auto store = EvidenceStore::open(path_);
    store->begin_run(run_info(run, 1));
    for (int i = 0; i < kPerRun; ++i)
      store->record(run, result("a.py::t" + std::to_string(i), "passed", i, i));
    store->record_batch(run, {result("z.py::batch1", "passed"), result("z.py::batch2", "passed")});
    store->finish_run(run, 2, RunStatus::kFinished, Conclusion::kSuccess, {});
  };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    try {
      write_run("r-child");
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      code = 1;
    }
    _exit(code);
  }
  write_run("r-parent");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(store_->finished_tests("r-child").size(), kPerRun + 2u);
  EXPECT_EQ(store_->finished_tests("r-parent").size(), kPerRun + 2u);
  EXPECT_EQ(store_->run("r-child")->status, RunStatus::kFinished);
}

}  // namespace
}  // namespace ootci
