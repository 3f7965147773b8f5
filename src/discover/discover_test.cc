#include "discover/discover.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "base/error.h"
#include "base/sha256.h"
#include "plan/plan_resolve.h"
#include "run/run_manifest.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

DiscoveryCandidate candidate(const std::string& relpath, const std::string& sha256) {
  return {"/torch/" + relpath, relpath, sha256};
}

class DiscoverTest : public ::testing::Test {
 protected:
  std::string dir_ = make_temp_dir();
  std::unique_ptr<EvidenceStore> store_ = EvidenceStore::open(dir_ + "/evidence.db");
};

TEST_F(DiscoverTest, SkipsOnlyFilesDiscoveredForThisContentAndRevision) {
  RunInfo run;
  run.id = "r-1";
  run.backend = "reference";
  run.status = RunStatus::kFinished;
  store_->begin_run(run);
  store_->mark_discovered({"test/test_a.py", "hash-a", "rev-1", "r-1", 100});
  store_->mark_discovered({"test/test_b.py", "hash-b-old", "rev-1", "r-1", 100});
  std::vector<DiscoveryCandidate> files = {candidate("test/test_a.py", "hash-a"),
                                           candidate("test/test_b.py", "hash-b-new"),
                                           candidate("test/test_c.py", "hash-c")};

  StaleSplit same_rev = split_stale(*store_, files, "rev-1", "", false);
  ASSERT_EQ(same_rev.up_to_date.size(), 1u);
  EXPECT_EQ(same_rev.up_to_date[0].relpath, "test/test_a.py");
  EXPECT_EQ(same_rev.up_to_date[0].run_id, "r-1");
  ASSERT_EQ(same_rev.to_run.size(), 2u);  // an edited file and a new one
  EXPECT_EQ(same_rev.to_run[0].relpath, "test/test_b.py");
  EXPECT_EQ(same_rev.to_run[1].relpath, "test/test_c.py");

  // A new backend revision makes every discovery stale.
  StaleSplit new_rev = split_stale(*store_, files, "rev-2", "", false);
  EXPECT_TRUE(new_rev.up_to_date.empty());
  EXPECT_EQ(new_rev.to_run.size(), 3u);

  StaleSplit forced = split_stale(*store_, files, "rev-1", "", true);
  EXPECT_TRUE(forced.up_to_date.empty());
  EXPECT_EQ(forced.to_run.size(), 3u);
}

TEST_F(DiscoverTest, AShardsDiscoveryCountsOnlyForThatShard) {
  RunInfo run;
  run.id = "r-2of3";
  run.backend = "reference";
  run.shard = "2/3";
  run.status = RunStatus::kFinished;
  store_->begin_run(run);
  store_->mark_discovered({"test/test_a.py", "hash-a", "rev-1", "r-2of3", 100});
  std::vector<DiscoveryCandidate> files = {candidate("test/test_a.py", "hash-a")};

  EXPECT_EQ(split_stale(*store_, files, "rev-1", "2/3", false).up_to_date.size(), 1u);
  // Another part of the file, or the whole file, is still to discover.
  EXPECT_EQ(split_stale(*store_, files, "rev-1", "1/3", false).to_run.size(), 1u);
  EXPECT_EQ(split_stale(*store_, files, "rev-1", "", false).to_run.size(), 1u);
}

TEST_F(DiscoverTest, GlobsAreRelativeToTorchRootAndEachMustMatch) {
  BackendConfig backend;
  backend.torch_root = dir_ + "/torch";
  backend.device_root = dir_ + "/backend";
  fs::create_directories(backend.torch_root + "/test");
  write_file(backend.torch_root + "/test/test_view_ops.py", "def test_a(): pass\n");
  write_file(backend.torch_root + "/test/test_unary_ops.py", "def test_b(): pass\n");
  write_file(backend.torch_root + "/test/test_other.py", "");

  auto found = discovery_candidates(backend, {"test/test_*_ops.py", "test/test_view_ops.py"});
  ASSERT_EQ(found.size(), 2u);  // listed twice, run once
  EXPECT_EQ(found[0].relpath, "test/test_unary_ops.py");
  EXPECT_EQ(found[1].relpath, "test/test_view_ops.py");
  EXPECT_EQ(found[1].path, fs::canonical(backend.torch_root + "/test/test_view_ops.py").string());
  EXPECT_EQ(found[1].sha256, sha256_hex("def test_a(): pass\n"));

  try {
    discovery_candidates(backend, {"test/test_nothing_*.py"});
    FAIL() << "a glob matching nothing must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--files test/test_nothing_*.py"), std::string::npos)
        << e.what();
  }
}

TEST_F(DiscoverTest, PlanRunsEveryVariantMandatoryWithTheBackendsEnvironment) {
  BackendConfig backend;
  backend.name = "reference";
  backend.device_type = "privateuseone";
  backend.modules = {"ootci_reference_backend"};
  backend.env = {{"OOTCI_REF_DISABLED_OPS", "fill"}};
  backend.torch_root = "/torch";
  nlohmann::json plan = discovery_plan(
      backend, {candidate("test/test_view_ops.py", "v"), candidate("test/test_a.py", "a")});
  EXPECT_EQ(plan["schema"], "ootci.plan");
  EXPECT_EQ(plan["version"], 1);
  EXPECT_EQ(plan["backend"]["env"]["OOTCI_REF_DISABLED_OPS"], "fill");
  EXPECT_EQ(plan["backend"]["device_type"], "privateuseone");
  ASSERT_EQ(plan["files"].size(), 2u);
  EXPECT_EQ(plan["files"][0]["relpath"], "test/test_a.py");  // sorted by path
  for (const auto& f : plan["files"]) {
    EXPECT_EQ(f["unlisted_test_mode"], "mandatory_success");
    EXPECT_TRUE(f["rules"].empty());
    EXPECT_TRUE(f["supported_ops"].is_null());
    EXPECT_TRUE(f["supported_dtypes"].is_null());
  }
  // Another backend config with the same files is the same adaptation.
  EXPECT_EQ(plan_config_hash(plan),
            plan_config_hash(discovery_plan(backend, {candidate("test/test_a.py", "a"),
                                                      candidate("test/test_view_ops.py", "v")})));
}

// The revision discovery keys on: a commit, and for a dirty checkout also its diff, so each edit of
// a backend kernel is a new revision.
TEST_F(DiscoverTest, BackendRevisionNamesTheCommitAndEachUncommittedEdit) {
  BackendConfig backend;
  backend.device_root = dir_ + "/backend";
  backend.workspace = backend.device_root + "/.ootci";
  fs::create_directories(backend.device_root);
  write_file(backend.device_root + "/kernels.cpp", "// v1\n");
  auto git = [&](const std::string& args) {
    ASSERT_EQ(
        std::system(("git -C " + backend.device_root + " " + args + " >/dev/null 2>&1").c_str()), 0)
        << args;
  };
  git("init -q");
  git("add kernels.cpp");
  git("-c user.name=t -c user.email=t@t commit -q -m v1");
  std::string clean = backend_revision(backend);
  ASSERT_EQ(clean.size(), 40u) << clean;
  EXPECT_EQ(backend_revision(backend), clean);

  write_file(backend.device_root + "/kernels.cpp", "// v2\n");
  std::string edit = backend_revision(backend);
  EXPECT_EQ(edit.rfind(clean + "-dirty+", 0), 0u) << edit;
  write_file(backend.device_root + "/kernels.cpp", "// v3\n");
  std::string other_edit = backend_revision(backend);
  EXPECT_EQ(other_edit.rfind(clean + "-dirty+", 0), 0u) << other_edit;
  EXPECT_NE(other_edit, edit);
  write_file(backend.device_root + "/kernels.cpp", "// v1\n");
  EXPECT_EQ(backend_revision(backend), clean);
}

TEST_F(DiscoverTest, SummaryCountsVariantsOutcomesFileErrorsAndDistinctOps) {
  auto result = [](const std::string& id, const std::string& outcome) {
    TestResult r;
    r.test_id = id;
    r.file = id.substr(0, id.find("::"));
    r.name = id.find("::") == std::string::npos ? "" : id.substr(id.rfind("::") + 2);
    r.outcome = *parse_outcome(outcome);
    return r;
  };
  std::vector<TestResult> results = {
      result("test/a.py::C::t1", "passed"), result("test/a.py::C::t2", "failed"),
      result("test/a.py::C::t3", "passed"), result("test/b.py", "error"),
      result("test/other.py::t", "passed")};
  results[3].error_class = "CollectionError";
  results[3].message = "pytest exited 2 before running a test\nTraceback ...";
  std::map<std::string, std::vector<std::string>> ops = {
      {"test/a.py::C::t1", {"aten::add.Tensor", "aten::view"}},
      {"test/a.py::C::t2", {"aten::view", "aten::fill_.Scalar"}}};
  auto summary =
      summarize_discovery({candidate("test/a.py", "a"), candidate("test/b.py", "b")}, results, ops);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].relpath, "test/a.py");
  EXPECT_EQ(summary[0].variants, 3);
  EXPECT_EQ(summary[0].outcomes.at(Outcome::kPassed), 2);
  EXPECT_EQ(summary[0].outcomes.at(Outcome::kFailed), 1);
  EXPECT_EQ(summary[0].distinct_ops, 3u);
  EXPECT_EQ(summary[1].variants, 0);
  ASSERT_EQ(summary[1].file_errors.size(), 1u);
  EXPECT_EQ(summary[1].file_errors[0], "CollectionError: pytest exited 2 before running a test");
}

TEST_F(DiscoverTest, TheRecordingPassLeavesOutWhatCrashedOrHungAndRunsCleanFilesWhole) {
  auto result = [](const std::string& id, const std::string& outcome, const std::string& cls) {
    TestResult r;
    r.test_id = id;
    r.file = id.substr(0, id.find("::"));
    r.name = id.find("::") == std::string::npos ? "" : id.substr(id.rfind("::") + 2);
    r.outcome = *parse_outcome(outcome);
    r.error_class = cls;
    return r;
  };
  Selection sel = recording_selection({
      result("test/a.py::C::ok", "passed", ""),
      result("test/a.py::C::wrong", "failed", "AssertionError"),
      result("test/a.py::C::aborts", "error", "SIGABRT"),
      result("test/a.py::C::waits", "error", "HelperDied"),
      result("test/a.py::C::hangs", "error", std::string(kTimeoutError)),
      result("test/a.py::C::skips", "skipped", ""),
      result("test/b.py::C::ok", "passed", ""),
      result("test/b.py::C::bad", "failed", "RuntimeError"),
      result("test/c.py::C::only_crashes", "error", "SIGSEGV"),
      result("test/d.py", "error", "CollectionError"),
  });
  EXPECT_EQ(sel.files, (std::set<std::string>{"test/b.py"}));
  EXPECT_EQ(sel.tests, (std::set<std::string>{"test/a.py::C::ok", "test/a.py::C::wrong",
                                              "test/a.py::C::skips"}));
  EXPECT_TRUE(sel.bases.empty());
  EXPECT_TRUE(sel.then_tests.empty());
}

}  // namespace
}  // namespace ootci
