// The real `ootci select changed`: a backend repo (a copy of the reference backend), an upstream
// checkout shaped like PyTorch's, and an evidence store holding a discovery.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "evidence/evidence_store.h"
#include "net/crypto.h"
#include "run/runner.h"
#include "select/git.h"
#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

std::string commit(const std::string& repo, const std::string& message) {
  git_output(repo, {"add", "-A"});
  git_output(repo, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
                    "--allow-empty", "-m", message});
  std::string sha = git_output(repo, {"rev-parse", "HEAD"});
  return sha.substr(0, sha.size() - 1);
}

TestResult variant(const std::string& file, const std::string& name, std::vector<std::string> ops) {
  TestResult t;
  t.file = file;
  t.cls = "TestOpsPRIVATEUSEONE";
  t.name = name;
  t.test_id = file + "::" + t.cls + "::" + name;
  t.outcome = Outcome::kPassed;
  t.duration_s = 1;
  t.ops = std::move(ops);
  return t;
}

class SelectChangedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = make_temp_dir();
    torch_ = dir + "/pytorch";
    backend_ = dir + "/backend";
    fs::create_directories(torch_ + "/test");
    fs::create_directories(torch_ + "/aten/src/ATen/native");
    write_file(torch_ + "/test/test_a.py", "# a\n");
    write_file(torch_ + "/test/test_b.py", "# b\n");
    write_file(torch_ + "/aten/src/ATen/native/native_functions.yaml",
               "- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)\n");
    git_output(torch_, {"init", "-q"});
    torch_base_ = commit(torch_, "upstream base");

    fs::create_directories(backend_ + "/configs");
    fs::copy(source_dir() + "/examples/reference-backend/csrc", backend_ + "/csrc");
    write_file(backend_ + "/ootci.yaml",
               "backend:\n"
               "  name: reference\n"
               "  device_type: privateuseone\n"
               "upstream:\n"
               "  torch_root: " +
                   torch_ +
                   "\n"
                   "test_configs: [configs/*.yaml]\n"
                   "workspace: .ootci\n");
    write_file(backend_ + "/configs/ops.yaml",
               "test_suite_config:\n"
               "  files:\n"
               "    - path: ${TORCH_ROOT}/test/test_a.py\n"
               "      unlisted_test_mode: mandatory_success\n"
               "    - path: ${TORCH_ROOT}/test/test_b.py\n"
               "      unlisted_test_mode: mandatory_success\n");
    write_file(backend_ + "/.gitignore", ".ootci/\n");
    git_output(backend_, {"init", "-q"});
    backend_base_ = commit(backend_, "backend base");

    auto store = EvidenceStore::open(backend_ + "/.ootci/evidence.db");
    RunInfo run;
    run.id = "r-discover";
    run.backend = "reference";
    run.status = RunStatus::kRunning;
    run.started_ms = 1;
    store->begin_run(run);
    store->record_batch("r-discover",
                        {variant("test/test_a.py", "test_view_float32", {"aten::view"}),
                         variant("test/test_a.py", "test_copy_float32", {"aten::_copy_from"}),
                         variant("test/test_b.py", "test_reshape_float32",
                                 {"aten::_reshape_alias", "aten::view"})});
    store->finish_run("r-discover", 2, RunStatus::kFinished, Conclusion::kSuccess, {});
    for (const char* f : {"test/test_a.py", "test/test_b.py"})
      store->mark_discovered({f, sha256_hex(read_file(torch_ + "/" + f)), "rev", "r-discover", 2});
  }

  CliRun select(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"select", "changed", "--config", backend_ + "/ootci.yaml",
                                     "-o",     out()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ootci(args);
  }
  std::string out() const { return backend_ + "/selection.json"; }
  // A backend commit that touches the registration of aten::view.
  void commit_view_change() {
    std::string kernels = read_file(backend_ + "/csrc/kernels.cpp");
    std::string line = "  m.impl(\"view\", TORCH_FN(at::native::view));\n";
    kernels.replace(kernels.find(line), line.size(),
                    "  m.impl(\"view\", TORCH_FN(at::native::view));  // the generic view\n");
    write_file(backend_ + "/csrc/kernels.cpp", kernels);
    commit(backend_, "view");
  }

  std::string torch_, backend_, torch_base_, backend_base_;
};

TEST_F(SelectChangedCli, AKernelCommitSelectsTheTestsThatCalledItsOpWithReasons) {
  commit_view_change();

  CliRun r = select({"--backend", backend_base_ + "..HEAD"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out),
            (Lines{"backend " + backend_base_ + "..HEAD: 1 files changed (1 ops)",
                   "touched ops: aten::view", "selected: 0 whole files of 2, 2 tests",
                   "selection: " + out()}));
  json sel = json::parse(read_file(out()));
  EXPECT_EQ(sel["files"], json::array());
  EXPECT_EQ(sel["tests"], json({"test/test_a.py::TestOpsPRIVATEUSEONE::test_view_float32",
                                "test/test_b.py::TestOpsPRIVATEUSEONE::test_reshape_float32"}));
  EXPECT_EQ(sel["reasons"]["test/test_b.py::TestOpsPRIVATEUSEONE::test_reshape_float32"],
            json({"backend csrc/kernels.cpp:78 changes aten::view (kernel at::native::view); the "
                  "test called aten::view"}));
  EXPECT_EQ(sel["summary"]["backend"]["files"][0]["path"], "csrc/kernels.cpp");

  // `ootci run --select` reads it: the reasons and summary ride along.
  Selection loaded = load_selection(out());
  EXPECT_TRUE(loaded.files.empty());
  EXPECT_EQ(loaded.tests.size(), 2u);
}

TEST_F(SelectChangedCli, AnAllocatorCommitRunsTheFullPlan) {
  write_file(backend_ + "/csrc/device.cpp", read_file(backend_ + "/csrc/device.cpp") + "int x;\n");
  commit(backend_, "allocator");
  CliRun r = select({"--backend", backend_base_});
  ASSERT_EQ(r.code, 0) << r.err;
  json sel = json::parse(read_file(out()));
  EXPECT_EQ(sel["files"], json({"test/test_a.py", "test/test_b.py"}));
  EXPECT_EQ(sel["tests"], json::array());
  EXPECT_EQ(sel["reasons"]["test/test_a.py"][0],
            "full plan: backend csrc/device.cpp modified: compiled into the backend but registers "
            "no op (allocator, guard, helpers)");
  EXPECT_NE(r.out.find("full plan:\n  backend csrc/device.cpp modified"), std::string::npos)
      << r.out;
}

TEST_F(SelectChangedCli, AnUpstreamTestFileChangeRunsThatFile) {
  write_file(torch_ + "/test/test_b.py", "# b, changed\n");
  commit(torch_, "upstream test change");
  CliRun r = select({"--upstream", torch_base_ + "..HEAD"});
  ASSERT_EQ(r.code, 0) << r.err;
  json sel = json::parse(read_file(out()));
  EXPECT_EQ(sel["files"], json({"test/test_b.py"}));
  EXPECT_EQ(sel["reasons"]["test/test_b.py"], json({"upstream test file test/test_b.py modified"}));
}

// Three tests of 1 s each: a budget of 40% keeps one of the two the view change selects, and
// says what it dropped.
TEST_F(SelectChangedCli, ABudgetKeepsTheStrongestEvidenceWithinItsShare) {
  commit_view_change();
  CliRun r = select({"--backend", backend_base_ + "..HEAD", "--budget", "40%"});
  ASSERT_EQ(r.code, 0) << r.err;
  json sel = json::parse(read_file(out()));
  EXPECT_EQ(sel["tests"].size(), 1u);
  EXPECT_EQ(sel["dropped"].size(), 1u);
  EXPECT_EQ(sel["summary"]["budget"]["kept"]["seconds"], 1.0);
  EXPECT_NE(r.out.find("budget 40% of 3.0 s of test time: kept 1 tests and 0 files (1.0 s; by "
                       "evidence: 1 op); dropped 1 tests and 0 files"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("recall at risk: no breakages"), std::string::npos) << r.out;

  CliRun bad = select({"--backend", backend_base_ + "..HEAD", "--budget", "ten"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--budget ten: expected a share of the full plan's test time"),
            std::string::npos)
      << bad.err;
}

TEST_F(SelectChangedCli, ErrorsNameWhatIsWrong) {
  CliRun none = select({});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("give --backend FROM..TO and/or --upstream FROM..TO"), std::string::npos)
      << none.err;
  CliRun bad = select({"--backend", "nope..HEAD"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--backend: nope is not a commit in " + backend_), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(out()));
  // A staged selection keeps every test; a budget or own calls only would drop some.
  for (std::vector<std::string> other : {std::vector<std::string>{"--budget", "10%"},
                                         std::vector<std::string>{"--own-calls-only"}}) {
    std::vector<std::string> args = {"--backend", backend_base_ + "..HEAD", "--staged"};
    args.insert(args.end(), other.begin(), other.end());
    CliRun both = select(args);
    EXPECT_EQ(both.code, 2) << both.err;
    // CLI11 names the pair in either order.
    EXPECT_TRUE(both.err.find("--staged excludes " + other[0]) != std::string::npos ||
                both.err.find(other[0] + " excludes --staged") != std::string::npos)
        << both.err;
  }
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace ootci
