#include "select/changed.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "base/error.h"
#include "base/sha256.h"
#include "select/git.h"
#include "select/second_stage.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

using Strings = std::set<std::string>;

void git(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"-c", "user.name=t", "-c", "user.email=t@example.com"};
  full.insert(full.end(), args.begin(), args.end());
  git_output(repo, full);
}

std::string commit(const std::string& repo, const std::string& message) {
  git(repo, {"add", "-A"});
  git(repo, {"commit", "-q", "--allow-empty", "-m", message});
  std::string sha = git_output(repo, {"rev-parse", "HEAD"});
  return sha.substr(0, sha.size() - 1);
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TestResult result(const std::string& file, const std::string& name, std::vector<std::string> ops,
                  const std::string& outcome = "passed") {
  TestResult t;
  t.file = file;
  t.cls = "TestOps";
  t.name = name;
  t.test_id = file + "::TestOps::" + name;
  t.outcome = *parse_outcome(outcome);
  t.mode = TestMode::kMandatorySuccess;
  t.ops = std::move(ops);
  return t;
}

// A backend repo holding a copy of the reference backend, and a store whose discovery saw each
// test of two upstream files call these ops.
class SelectChanged : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir();
    repo_ = dir_ + "/backend";
    fs::create_directories(repo_);
    fs::copy(source_dir() + "/examples/reference-backend/csrc", repo_ + "/csrc");
    write_file(repo_ + "/setup.py", "from setuptools import setup\nsetup()\n");
    write_file(repo_ + "/README.md", "# device\n");
    git_output(repo_, {"init", "-q"});
    base_ = commit(repo_, "base");

    std::string torch = dir_ + "/torch/test";
    fs::create_directories(torch);
    for (const char* f : {"test_a.py", "test_b.py", "test_new.py"}) {
      write_file(torch + "/" + f, std::string("# ") + f + "\n");
      plan_.push_back({std::string("test/") + f, torch + "/" + f});
    }
    store_ = EvidenceStore::open(dir_ + "/evidence.db");
    RunInfo run;
    run.id = "r-discover";
    run.backend = "reference";
    run.status = RunStatus::kRunning;
    run.started_ms = 1;
    store_->begin_run(run);
    const std::string a = "test/test_a.py", b = "test/test_b.py";
    store_->record_batch(
        "r-discover",
        {result(a, "test_view", {"aten::empty.memory_format", "aten::view"}),
         result(a, "test_add", {"aten::add.Tensor", "aten::empty.memory_format"}),
         result(a, "test_add_inplace", {"aten::add_.Tensor"}),
         result(a, "test_addmm", {"aten::addmm"}), result(a, "test_copy", {"aten::_copy_from"}),
         result(a, "test_crash", {}, "error"), result(a, "test_skipped", {}, "skipped"),
         result(b, "test_sum", {"aten::sum.dim_IntList"}),
         result(b, "test_add", {"aten::add.out"})});
    store_->finish_run("r-discover", 2, RunStatus::kFinished, Conclusion::kFailure, {});
    for (const auto& f : {a, b})
      store_->mark_discovered(
          {f, sha256_hex(read_file(dir_ + "/torch/" + f)), "rev", "r-discover", 2});
  }

  std::string kernels() { return read_file(repo_ + "/csrc/kernels.cpp"); }
  void write_kernels(const std::string& text) { write_file(repo_ + "/csrc/kernels.cpp", text); }

  ChangedSelection select(const std::string& to) {
    ChangeFacts facts = backend_changes(repo_, base_ + ".." + to, "PrivateUse1");
    return select_from_facts(facts, plan_, *store_);
  }

  std::string dir_, repo_, base_;
  std::vector<PlanFileRef> plan_;
  std::unique_ptr<EvidenceStore> store_;
};

TEST_F(SelectChanged, AChangeInsideOneKernelSelectsTheTestsThatCalledItsOp) {
  write_kernels(replace(kernels(), "  if (dst.numel() == 0) return dst;\n",
                        "  if (dst.numel() == 0 || self.numel() == 0) return dst;\n"));
  ChangedSelection s = select(commit(repo_, "copy_from: skip empty sources"));
  // test_new.py was never discovered, so it runs whole; the crashed variant has no recorded ops.
  EXPECT_EQ(s.files, Strings{"test/test_new.py"});
  EXPECT_EQ(s.tests,
            (Strings{"test/test_a.py::TestOps::test_copy", "test/test_a.py::TestOps::test_crash"}));
  EXPECT_EQ(s.reasons.at("test/test_a.py::TestOps::test_copy"),
            std::vector<std::string>{"backend csrc/kernels.cpp:50 changes aten::_copy_from (kernel "
                                     "ootci_ref::copy_from); the test called aten::_copy_from"});
  EXPECT_NE(s.reasons.at("test/test_new.py")[0].find("never discovered"), std::string::npos);
  EXPECT_EQ(s.summary["touched_ops"], nlohmann::json::array({"aten::_copy_from"}));
  EXPECT_TRUE(s.summary["full_plan"].empty());
  EXPECT_EQ(s.summary["files"][0]["path"], "csrc/kernels.cpp");
  EXPECT_EQ(s.summary["files"][0]["effect"], "ops");
}

TEST_F(SelectChanged, ANewKernelFileSelectsEveryVariantOfItsOp) {
  fs::create_directories(repo_ + "/csrc/faults");
  write_file(
      repo_ + "/csrc/faults/add.cpp",
      "#include <torch/library.h>\n"
      "namespace {\n"
      "at::Tensor broken_add(const at::Tensor& a, const at::Tensor& b, const at::Scalar&) {\n"
      "  return a;\n"
      "}\n"
      "}  // namespace\n"
      "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
      "  m.impl(\"add\", TORCH_FN(broken_add));\n"
      "}\n");
  ChangedSelection s = select(commit(repo_, "add kernel"));
  // add.Tensor, add_.Tensor and add.out share the family aten::add; addmm does not.
  EXPECT_EQ(
      s.tests,
      (Strings{"test/test_a.py::TestOps::test_add", "test/test_a.py::TestOps::test_add_inplace",
               "test/test_a.py::TestOps::test_crash", "test/test_b.py::TestOps::test_add"}));
  EXPECT_EQ(s.reasons.at("test/test_a.py::TestOps::test_add_inplace")[0],
            "backend csrc/faults/add.cpp (new file) registers aten::add (kernel broken_add); the "
            "test called aten::add_.Tensor");
}

// Tests of test_a.py that ran add with known dtypes (schema 3 evidence), beside the fixture's
// tests recorded without dtypes.
void record_add_dtypes(EvidenceStore& store) {
  const std::string a = "test/test_a.py";
  auto with = [&](const std::string& name, std::vector<std::string> ops,
                  std::vector<std::string> pairs) {
    TestResult r = result(a, name, std::move(ops));
    r.op_dtypes = std::move(pairs);
    return r;
  };
  store.record_batch("r-discover",
                     {with("test_add_float32", {"aten::add.Tensor"}, {"aten::add.Tensor:float32"}),
                      with("test_add_float64", {"aten::add.Tensor"}, {"aten::add.Tensor:float64"}),
                      with("test_add_int64", {"aten::add_.Tensor", "aten::mul.Tensor"},
                           {"aten::add_.Tensor:int64", "aten::mul.Tensor:float32"}),
                      with("test_add_mixed", {"aten::add.out"},
                           {"aten::add.out:float32", "aten::add.out:int64"})});
  // A test that ran float32 add only inside make_tensor: its inputs change, not what it checks.
  TestResult inputs = with("test_add_in_inputs", {"aten::add.Tensor", "aten::sub.Tensor"},
                           {"aten::add.Tensor:float32", "aten::sub.Tensor:float32"});
  inputs.input_op_dtypes = {"aten::add.Tensor:float32"};
  store.record("r-discover", inputs);
}

// The bench's dtype fault: a boxed kernel for add.Tensor whose float32 path is wrong and which
// hands every other dtype to the fallback. Returns the commit.
std::string commit_add_float32_fault(const std::string& repo) {
  fs::create_directories(repo + "/csrc/faults");
  write_file(repo + "/csrc/faults/add.cpp",
             "#include <ATen/native/CPUFallback.h>\n"
             "#include <torch/library.h>\n"
             "namespace ootci_ref {\n"
             "void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);\n"
             "}\n"
             "namespace faults {\n"
             "void add_float32(const c10::OperatorHandle& op, torch::jit::Stack* stack) {\n"
             "  const at::Tensor self = (*stack)[0].toTensor();\n"
             "  if (self.scalar_type() != at::ScalarType::Float) return "
             "ootci_ref::cpu_fallback(op, stack);\n"
             "  at::native::cpu_fallback(op, stack);\n"
             "  stack->back().toTensor().add_(1);\n"
             "}\n"
             "}  // namespace faults\n"
             "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
             "  m.impl(\"add.Tensor\", "
             "torch::CppFunction::makeFromBoxedFunction<&faults::add_float32>());\n"
             "}\n");
  return commit(repo, "add: float32 on the device");
}

// Issue 20's acceptance: a fault in float32 add selects only the tests with float32 add evidence
// (and those whose dtypes were never recorded), each with the (op, dtype) and the hunk.
TEST_F(SelectChanged, AKernelForOneDtypeSelectsOnlyTestsThatRanItsOpWithThatDtype) {
  record_add_dtypes(*store_);
  ChangedSelection s = select(commit_add_float32_fault(repo_));
  EXPECT_EQ(
      s.tests,
      (Strings{"test/test_a.py::TestOps::test_add", "test/test_a.py::TestOps::test_add_float32",
               "test/test_a.py::TestOps::test_add_in_inputs",
               "test/test_a.py::TestOps::test_add_inplace",
               "test/test_a.py::TestOps::test_add_mixed", "test/test_a.py::TestOps::test_crash",
               "test/test_b.py::TestOps::test_add"}));
  // Every test the change can reach is selected; the evidence says how directly.
  EXPECT_EQ(s.evidence.at("test/test_a.py::TestOps::test_add_float32"), Evidence::kOpAndDtype);
  EXPECT_EQ(s.evidence.at("test/test_a.py::TestOps::test_add_in_inputs"), Evidence::kInputsOnly);
  EXPECT_EQ(s.evidence.at("test/test_a.py::TestOps::test_add"), Evidence::kOpAnyDtype);
  EXPECT_EQ(s.evidence.at("test/test_a.py::TestOps::test_crash"), Evidence::kUnknown);
  EXPECT_NE(s.reasons.at("test/test_a.py::TestOps::test_add_in_inputs")[0].find(
                "the test called aten::add.Tensor with float32 only while generating its inputs"),
            std::string::npos)
      << s.reasons.at("test/test_a.py::TestOps::test_add_in_inputs")[0];
  EXPECT_EQ(s.reasons.at("test/test_a.py::TestOps::test_add_mixed"),
            std::vector<std::string>{
                "backend csrc/faults/add.cpp (new file) registers aten::add.Tensor (kernel "
                "faults::add_float32), for float32 only (a kernel for float32 only: line 9 hands "
                "every other dtype to the fallback cpu_fallback); the test called aten::add.out "
                "with float32"});
  EXPECT_NE(s.reasons.at("test/test_a.py::TestOps::test_add")[0].find(
                "the test called aten::add.Tensor (its dtypes were not recorded)"),
            std::string::npos);
  EXPECT_EQ(s.summary["touched_dtypes"], (nlohmann::json{{"aten::add.Tensor", {"float32"}}}));
  // Own calls only: the test that ran float32 add only in make_tensor is left out, and said so.
  SelectOptions own;
  own.own_calls_only = true;
  ChangedSelection narrow = select_from_facts(
      backend_changes(repo_, base_ + "..HEAD", "PrivateUse1"), plan_, *store_, own);
  EXPECT_FALSE(narrow.tests.count("test/test_a.py::TestOps::test_add_in_inputs"));
  EXPECT_TRUE(narrow.tests.count("test/test_a.py::TestOps::test_add_float32"));
  EXPECT_EQ(narrow.tests.size(), s.tests.size() - 1);
  EXPECT_EQ(narrow.summary["left_out_input_generation"], 1);
  EXPECT_NE(format_changed_summary(narrow).find("left out: 1 tests that reached a changed op "
                                                "only while generating their inputs"),
            std::string::npos);
  EXPECT_NE(format_changed_summary(s).find("touched ops: aten::add.Tensor (float32 only)"),
            std::string::npos)
      << format_changed_summary(s);
  // Staged: that test moves to a second stage, which `ootci run` runs when the first stage shows
  // the change raising; test_add_float32 calls the op itself, so a raise would show there.
  SelectOptions staged;
  staged.staged = true;
  ChangedSelection two = select_from_facts(backend_changes(repo_, base_ + "..HEAD", "PrivateUse1"),
                                           plan_, *store_, staged);
  EXPECT_EQ(two.then_tests, Strings{"test/test_a.py::TestOps::test_add_in_inputs"});
  EXPECT_EQ(two.tests.size(), s.tests.size() - 1);
  EXPECT_EQ(two.to_json()["then"]["tests"],
            nlohmann::json::array({"test/test_a.py::TestOps::test_add_in_inputs"}));
  EXPECT_EQ(two.to_json()["then"]["when"], kSecondStageWhen);
  EXPECT_FALSE(s.to_json().contains("then"));
  EXPECT_NE(format_changed_summary(two).find("second stage: 1 tests"), std::string::npos)
      << format_changed_summary(two);
}

// Staged with discovery's input probe: a test the probe failed (its outcome depends on the values
// it draws) stays in the first stage; one that held moves on. Without any probe, a warning.
TEST_F(SelectChanged, StagedKeepsTestsWhoseOutcomeDependsOnTheirInputValuesFirst) {
  record_add_dtypes(*store_);
  TestResult fragile = result("test/test_a.py", "test_sum_in_inputs", {"aten::add.Tensor"});
  fragile.op_dtypes = {"aten::add.Tensor:float32"};
  fragile.input_op_dtypes = {"aten::add.Tensor:float32"};
  store_->record("r-discover", fragile);
  std::string fault = commit_add_float32_fault(repo_);
  SelectOptions staged;
  staged.staged = true;
  auto select_staged = [&] {
    return select_from_facts(backend_changes(repo_, base_ + ".." + fault, "PrivateUse1"), plan_,
                             *store_, staged);
  };
  ChangedSelection unprobed = select_staged();
  EXPECT_EQ(unprobed.then_tests, (Strings{"test/test_a.py::TestOps::test_add_in_inputs",
                                          "test/test_a.py::TestOps::test_sum_in_inputs"}));
  EXPECT_EQ(unprobed.summary["unprobed_files"], 1);
  EXPECT_NE(format_changed_summary(unprobed).find(
                "warning: 1 files of the second stage were discovered without the input probe"),
            std::string::npos)
      << format_changed_summary(unprobed);

  store_->set_input_probes(
      "r-discover",
      {{fragile.test_id, "failed with its inputs shifted by 1.522: AssertionError"},
       {"test/test_a.py::TestOps::test_add_in_inputs", "held: 8 shifts of its inputs"}});
  ChangedSelection probed = select_staged();
  EXPECT_EQ(probed.then_tests, Strings{"test/test_a.py::TestOps::test_add_in_inputs"});
  EXPECT_TRUE(probed.tests.count(fragile.test_id));
  EXPECT_EQ(probed.evidence.at(fragile.test_id), Evidence::kInputsOnly);
  EXPECT_EQ(probed.summary["value_sensitive_first_stage"], 1);
  EXPECT_EQ(probed.summary["unprobed_files"], 0);
  EXPECT_EQ(probed.reasons.at(fragile.test_id).back(),
            "first stage: its outcome depends on the values it draws (discovery's input probe: "
            "it failed with its inputs shifted by 1.522: AssertionError)");
  EXPECT_NE(format_changed_summary(probed).find("first stage: 1 tests that reached a changed op "
                                                "only while generating their inputs, but whose "
                                                "outcome depends on the values they draw"),
            std::string::npos)
      << format_changed_summary(probed);
}

// Staged, for an op that no test calls itself: a raise could show in no first-stage test, so the
// tests that reach it only through their inputs stay in the first stage.
TEST_F(SelectChanged, StagedKeepsInputTestsFirstWhenNoTestCallsTheOpItself) {
  TestResult inputs = result("test/test_a.py", "test_rsub_in_inputs", {"aten::rsub.Scalar"});
  inputs.op_dtypes = {"aten::rsub.Scalar:float32"};
  inputs.input_op_dtypes = {"aten::rsub.Scalar:float32"};
  store_->record("r-discover", inputs);
  fs::create_directories(repo_ + "/csrc/faults");
  write_file(repo_ + "/csrc/faults/rsub.cpp",
             "#include <torch/library.h>\n"
             "namespace {\n"
             "at::Tensor broken_rsub(const at::Tensor& a, const at::Scalar&, const at::Scalar&) {\n"
             "  return a;\n"
             "}\n"
             "}  // namespace\n"
             "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
             "  m.impl(\"rsub.Scalar\", TORCH_FN(broken_rsub));\n"
             "}\n");
  commit(repo_, "rsub kernel");
  SelectOptions staged;
  staged.staged = true;
  ChangedSelection s = select_from_facts(backend_changes(repo_, base_ + "..HEAD", "PrivateUse1"),
                                         plan_, *store_, staged);
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_rsub_in_inputs"));
  EXPECT_EQ(s.evidence.at("test/test_a.py::TestOps::test_rsub_in_inputs"), Evidence::kInputsOnly);
  EXPECT_TRUE(s.then_tests.empty());
  EXPECT_FALSE(s.to_json().contains("then"));
}

// A change inside a dtype branch of an existing kernel: that dtype only. The same kernel
// changed outside the branch: every dtype.
TEST_F(SelectChanged, AChangeInsideADtypeBranchOfAKernelSelectsThatDtype) {
  record_add_dtypes(*store_);
  fs::create_directories(repo_ + "/csrc/faults");
  std::string kernel =
      "#include <torch/library.h>\n"
      "namespace faults {\n"
      "at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& a) {\n"
      "  auto out = at::native::add(self.cpu(), other.cpu(), a);\n"
      "  if (self.scalar_type() == at::kDouble) {\n"
      "    out.mul_(1);\n"
      "  }\n"
      "  return out.to(self.device());\n"
      "}\n"
      "}  // namespace faults\n"
      "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
      "  m.impl(\"add.Tensor\", TORCH_FN(faults::add));\n"
      "}\n";
  write_file(repo_ + "/csrc/faults/add.cpp", kernel);
  base_ = commit(repo_, "add kernel");
  write_file(repo_ + "/csrc/faults/add.cpp", replace(kernel, "out.mul_(1)", "out.mul_(2)"));
  ChangedSelection s = select(commit(repo_, "float64 add: scale"));
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_add_float64"));
  EXPECT_FALSE(s.tests.count("test/test_a.py::TestOps::test_add_float32"));
  EXPECT_FALSE(s.tests.count("test/test_a.py::TestOps::test_add_mixed"));
  EXPECT_EQ(s.reasons.at("test/test_a.py::TestOps::test_add_float64")[0],
            "backend csrc/faults/add.cpp:6 changes aten::add.Tensor (kernel faults::add), for "
            "float64 only (inside `if (self.scalar_type() == at::kDouble)` at line 5); the test "
            "called aten::add.Tensor with float64");

  std::string before = read_file(repo_ + "/csrc/faults/add.cpp");
  base_ = commit(repo_, "again");
  write_file(repo_ + "/csrc/faults/add.cpp",
             replace(before, "  return out.to(", "  out.add_(0);\n  return out.to("));
  s = select(commit(repo_, "every dtype"));
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_add_float32"));
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_add_float64"));
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_add_int64"));
}

TEST_F(SelectChanged, RemovedRegistrationsTouchTheirOpsFromTheOldSide) {
  write_kernels(replace(kernels(), "  m.impl(\"view\", TORCH_FN(at::native::view));\n", ""));
  ChangedSelection s = select(commit(repo_, "view falls back"));
  EXPECT_TRUE(s.tests.count("test/test_a.py::TestOps::test_view"));
  EXPECT_FALSE(s.tests.count("test/test_a.py::TestOps::test_add"));
  EXPECT_EQ(s.reasons.at("test/test_a.py::TestOps::test_view")[0],
            "backend csrc/kernels.cpp:78 (removed lines) changes aten::view (kernel "
            "at::native::view); the test called aten::view");
}

TEST_F(SelectChanged, TheFallbackHeadersAndCodeThatRegistersNothingNeedTheFullPlan) {
  write_kernels(replace(kernels(), "  check_op_allowed(op);\n",
                        "  check_op_allowed(op);\n  // x\n  (void)0;\n"));
  ChangedSelection s = select(commit(repo_, "fallback"));
  EXPECT_EQ(s.files, (Strings{"test/test_a.py", "test/test_b.py", "test/test_new.py"}));
  EXPECT_TRUE(s.tests.empty());
  ASSERT_EQ(s.summary["full_plan"].size(), 1u);
  EXPECT_EQ(s.summary["full_plan"][0],
            "backend csrc/kernels.cpp:64 changes the boxed fallback (ootci_ref::cpu_fallback), "
            "which serves every op without its own kernel");
  EXPECT_EQ(s.reasons.at("test/test_b.py")[0],
            "full plan: " + s.summary["full_plan"][0].get<std::string>());

  base_ = commit(repo_, "new base");
  write_file(repo_ + "/csrc/device.h", read_file(repo_ + "/csrc/device.h") + "int more();\n");
  s = select(commit(repo_, "header"));
  EXPECT_EQ(s.files.size(), 3u);
  EXPECT_NE(s.summary["full_plan"][0].get<std::string>().find("csrc/device.h modified: a header"),
            std::string::npos);

  base_ = commit(repo_, "new base");
  std::string device = read_file(repo_ + "/csrc/device.cpp");
  write_file(repo_ + "/csrc/device.cpp",
             replace(device, "return &g_allocator;", "return &g_allocator;  \n"));
  s = select(commit(repo_, "allocator"));
  EXPECT_EQ(s.files.size(), 3u);
  EXPECT_NE(s.summary["full_plan"][0].get<std::string>().find("registers no op"),
            std::string::npos);

  base_ = commit(repo_, "new base");
  write_file(repo_ + "/setup.py", "from setuptools import setup\nsetup(name='x')\n");
  s = select(commit(repo_, "build"));
  EXPECT_EQ(s.files.size(), 3u);
  EXPECT_NE(s.summary["full_plan"][0].get<std::string>().find("setup.py modified"),
            std::string::npos);
}

TEST_F(SelectChanged, CommentsDocsAndOwnTestsSelectNothing) {
  write_kernels(
      replace(kernels(), "// Runs any other op on the CPU;", "// Runs { any other op on the CPU;"));
  write_file(repo_ + "/README.md", "# device, documented\n");
  fs::create_directories(repo_ + "/tests");
  write_file(repo_ + "/tests/test_device.py", "def test_x():\n    pass\n");
  ChangedSelection s = select(commit(repo_, "docs"));
  EXPECT_TRUE(s.files.empty());
  EXPECT_TRUE(s.tests.empty());
  std::map<std::string, std::string> effects;
  for (const auto& f : s.summary["files"]) effects[f["path"]] = f["effect"];
  EXPECT_EQ(effects, (std::map<std::string, std::string>{{"README.md", "ignored"},
                                                         {"csrc/kernels.cpp", "ignored"},
                                                         {"tests/test_device.py", "ignored"}}));
}

TEST_F(SelectChanged, AStaleDiscoveryRunsTheWholeFile) {
  write_file(dir_ + "/torch/test/test_b.py", "# changed upstream\n");
  write_kernels(replace(kernels(), "  if (dst.numel() == 0) return dst;\n", "  return dst;\n"));
  ChangedSelection s = select(commit(repo_, "copy"));
  EXPECT_EQ(s.files, (Strings{"test/test_b.py", "test/test_new.py"}));
  EXPECT_NE(s.reasons.at("test/test_b.py")[0].find("changed since its discovery"),
            std::string::npos);
  EXPECT_EQ(s.summary["stale_files"], 1);
}

TEST_F(SelectChanged, BadRangesNameTheFlag) {
  try {
    backend_changes(repo_, "nope..HEAD", "PrivateUse1");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--backend: nope is not a commit"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(backend_changes(repo_, "a...b", "PrivateUse1"), Error);
}

// An upstream checkout shaped like PyTorch's: operator entries, a native kernel file, tests.
class UpstreamChanged : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = make_temp_dir() + "/pytorch";
    fs::create_directories(repo_ + "/aten/src/ATen/native/cuda");
    fs::create_directories(repo_ + "/test");
    fs::create_directories(repo_ + "/c10/core");
    write_file(repo_ + "/aten/src/ATen/native/native_functions.yaml", kYaml);
    write_file(repo_ + "/aten/src/ATen/native/BinaryOps.cpp", kBinaryOps);
    write_file(repo_ + "/aten/src/ATen/native/cuda/BinaryOps.cu", "// cuda\n");
    write_file(repo_ + "/c10/core/TensorImpl.h", "// core\n");
    write_file(repo_ + "/test/test_a.py", "# a\n");
    write_file(repo_ + "/test/test_other.py", "# other\n");
    write_file(repo_ + "/test/common_helper.py", "# helper\n");
    git_output(repo_, {"init", "-q"});
    base_ = commit(repo_, "base");
  }

  ChangeFacts changes() {
    return upstream_changes(repo_, base_ + "..HEAD", {"test/test_a.py", "test/test_b.py"});
  }
  void edit(const std::string& path, const std::string& from, const std::string& to) {
    write_file(repo_ + "/" + path, replace(read_file(repo_ + "/" + path), from, to));
  }

  static constexpr const char* kYaml =
      "# Header comment\n"
      "\n"
      "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"  // 3
      "  structured_delegate: add.out\n"
      "  variants: function, method\n"
      "\n"
      "- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
      "Tensor(a!)\n"  // 7
      "  structured: True\n"
      "  dispatch:\n"
      "    CPU, CUDA: add_out\n"
      "    SparseCPU: add_out_sparse_cpu\n"
      "\n"
      "- func: mul.Tensor(Tensor self, Tensor other) -> Tensor\n"  // 13
      "  dispatch:\n"
      "    CompositeExplicitAutograd: mul\n";
  static constexpr const char* kBinaryOps =
      "#include <ATen/ATen.h>\n"
      "namespace at::native {\n"
      "static int shared_helper(int x) {\n"  // 3
      "  return x;\n"
      "}\n"
      "TORCH_IMPL_FUNC(add_out) (const Tensor& self, const Tensor& other, const Scalar& alpha,\n"
      "                          const Tensor& result) {\n"  // 7
      "  add_stub(device_type(), *this, alpha);\n"
      "}\n"
      "Tensor mul(const Tensor& self, const Tensor& other) {\n"  // 10
      "  return self;\n"
      "}\n"
      "}  // namespace at::native\n";

  std::string repo_, base_;
};

TEST_F(UpstreamChanged, ChangedPlanTestFilesRunWholeAndOthersAreIgnored) {
  write_file(repo_ + "/test/test_a.py", "# a, changed\n");
  write_file(repo_ + "/test/test_other.py", "# other, changed\n");
  write_file(repo_ + "/README.md", "docs\n");
  write_file(repo_ + "/aten/src/ATen/native/cuda/BinaryOps.cu", "// cuda, changed\n");
  commit(repo_, "tests");
  ChangeFacts f = changes();
  EXPECT_TRUE(f.full_plan.empty());
  EXPECT_TRUE(f.ops.empty());
  ASSERT_EQ(f.files.size(), 1u);
  EXPECT_EQ(f.files.at("test/test_a.py"),
            std::vector<std::string>{"upstream test file test/test_a.py modified"});
}

TEST_F(UpstreamChanged, AKernelChangeTouchesItsOpsThroughDispatchEntries) {
  edit("aten/src/ATen/native/BinaryOps.cpp", "  add_stub(device_type(), *this, alpha);\n",
       "  add_stub(device_type(), *this, -alpha);\n");
  edit("aten/src/ATen/native/BinaryOps.cpp", "  return self;\n", "  return self * other;\n");
  commit(repo_, "kernels");
  ChangeFacts f = changes();
  EXPECT_TRUE(f.full_plan.empty()) << f.full_plan[0];
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops.at("aten::add.out")[0].why,
            "upstream aten/src/ATen/native/BinaryOps.cpp:8 changes add_out, a kernel of "
            "aten::add.out");
  EXPECT_EQ(f.ops.at("aten::mul.Tensor")[0].why,
            "upstream aten/src/ATen/native/BinaryOps.cpp:11 changes mul, a kernel of "
            "aten::mul.Tensor");
}

// Upstream CPU kernels dispatch on dtypes with AT_DISPATCH_* macros: a change inside one can
// affect only the macro's dtypes.
TEST_F(UpstreamChanged, AChangeInsideADispatchMacroTouchesOnlyItsDtypes) {
  edit("aten/src/ATen/native/BinaryOps.cpp", "  return self;\n",
       "  AT_DISPATCH_FLOATING_TYPES_AND(kHalf, self.scalar_type(), \"mul\", [&] {\n"
       "    mul_kernel<scalar_t>(self, other);\n"
       "  });\n"
       "  return self;\n");
  base_ = commit(repo_, "mul dispatches");
  edit("aten/src/ATen/native/BinaryOps.cpp", "    mul_kernel<scalar_t>(self, other);\n",
       "    mul_kernel<scalar_t>(self, other, /*fast=*/true);\n");
  commit(repo_, "fast mul");
  ChangeFacts f = changes();
  ASSERT_EQ(f.ops.size(), 1u);
  const OpChange& c = f.ops.at("aten::mul.Tensor")[0];
  EXPECT_EQ(c.dtypes, (Strings{"float16", "float32", "float64"}));
  EXPECT_EQ(c.dtype_why,
            "inside AT_DISPATCH_FLOATING_TYPES_AND at line 11 (float16, float32, float64)");
}

TEST_F(UpstreamChanged, ANativeFunctionsEntryChangeTouchesThatOp) {
  edit("aten/src/ATen/native/native_functions.yaml", "  variants: function, method\n",
       "  variants: function\n");
  commit(repo_, "yaml");
  ChangeFacts f = changes();
  EXPECT_TRUE(f.full_plan.empty());
  ASSERT_EQ(f.ops.size(), 1u);
  EXPECT_EQ(f.ops.begin()->first, "aten::add.Tensor");
}

TEST_F(UpstreamChanged, HelpersCoreAndTestHelpersNeedTheFullPlan) {
  edit("aten/src/ATen/native/BinaryOps.cpp", "  return x;\n", "  return x + 1;\n");
  commit(repo_, "helper");
  ChangeFacts f = changes();
  ASSERT_EQ(f.full_plan.size(), 1u);
  EXPECT_EQ(f.full_plan[0],
            "upstream aten/src/ATen/native/BinaryOps.cpp:4 changes shared_helper, which no "
            "native_functions.yaml entry names (a shared helper)");

  base_ = commit(repo_, "base 2");
  write_file(repo_ + "/c10/core/TensorImpl.h", "// core, changed\n");
  edit("aten/src/ATen/native/BinaryOps.cpp", "  return self;\n", "  return other;\n");
  commit(repo_, "core");
  f = changes();
  ASSERT_EQ(f.full_plan.size(), 1u);
  EXPECT_EQ(f.full_plan[0],
            "upstream core changed outside operator kernels: c10/core/TensorImpl.h");

  base_ = commit(repo_, "base 3");
  write_file(repo_ + "/test/common_helper.py", "# helper, changed\n");
  commit(repo_, "test helper");
  f = changes();
  ASSERT_EQ(f.full_plan.size(), 1u);
  EXPECT_NE(f.full_plan[0].find("test helper test/common_helper.py modified"), std::string::npos);
}

}  // namespace
}  // namespace ootci
