// The real `ootci plan` binary: what it prints, where, and its exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "net/crypto.h"
#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

CliRun ootci(const Lines& args, const std::map<std::string, std::string>& env = {}) {
  return run_ootci(args, env);
}

Lines lines(const std::string& text) {
  return split_lines(text);
}

TEST(PlanCli, CheckReportsEveryErrorOnStderrAndExits1) {
  std::string dir = make_temp_dir();
  std::string bad = dir + "/bad.yaml";
  write_file(bad, R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      unlisted_test_mode: sometimes
      tests:
        - names: [A::test_a, A::b::c]
          mode: xfial
        - names: [B::test_b]
        - names: [B::test_b]
  global:
    supported_dtypes: [{name: float8}]
)");
  CliRun r = ootci({"plan", "check", bad});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err),
            (Lines{
                bad + ":4:27: test_suite_config.files[0].unlisted_test_mode: unknown mode "
                      "'sometimes' (expected mandatory_success, xfail, xfail_strict or skip)",
                bad + ":6:30: test_suite_config.files[0].tests[0].names[1]: invalid test name "
                      "'A::b::c' (expected Class::method or method)",
                bad + ":7:17: test_suite_config.files[0].tests[0].mode: unknown mode 'xfial' "
                      "(expected mandatory_success, xfail, xfail_strict or skip)",
                bad + ":11:31: test_suite_config.global.supported_dtypes[0].name: unknown dtype "
                      "'float8' (expected one of float16, float32, float64, bfloat16, half, int8, "
                      "int16, int32, int64, uint8, uint16, uint32, uint64, complex32, complex64, "
                      "complex128, bool)",
                "warning: " + bad +
                    ":9:19: test_suite_config.files[0].tests[2].names[0]: duplicate 'B::test_b' "
                    "(also listed at " +
                    bad + ":8:19 with the same mode)",
            }));
}

TEST(PlanCli, CheckAcceptsTheRealSpyreConfigs) {
  CliRun r = ootci({"plan", "check", fixture_path("spyre-configs/test_indexing.yaml"),
                    fixture_path("spyre-configs/example_test_config.yaml")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "ok: 2 files, 15 rules\n");
}

TEST(PlanCli, UsageErrorsExit2) {
  EXPECT_EQ(ootci({"plan", "resolve"}).code, 2);
  EXPECT_EQ(ootci({"plan", "check"}).code, 2);
  EXPECT_EQ(ootci({"plan", "env", "--config", "x", "--bogus"}).code, 2);
}

// A backend folder with ootci.yaml and one config, and a fake torch checkout beside it.
class PlanCliResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(make_temp_dir()).string();
    std::filesystem::create_directories(root_ + "/torch/test");
    std::filesystem::create_directories(root_ + "/backend/configs");
    write_file(root_ + "/torch/test/test_a.py", "def test_x(): pass\n");
    write_file(root_ + "/backend/configs/a.yaml", R"(test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      unlisted_test_mode: xfail
      tests:
        - names: [TestA::test_x]
          mode: mandatory_success
          edits: {dtypes: {exclude: [{name: half}]}}
)");
    write_file(root_ + "/backend/ootci.yaml", R"(backend:
  name: reference
  device_type: privateuseone
  pythonpath: [.]
  env:
    QUOTED: "it's"
upstream:
  torch_root: ${FAKE_TORCH}
test_configs: [configs/*.yaml]
)");
    // ootci checks that the folder holds ootci_torch/.
    std::filesystem::create_directories(root_ + "/py/ootci_torch");
    env_ = {
        {"FAKE_TORCH", root_ + "/torch"}, {"OOTCI_PYTHON_DIR", root_ + "/py"}, {"PYTHONPATH", ""}};
  }
  std::string root_;
  std::map<std::string, std::string> env_;
};

TEST_F(PlanCliResolve, ResolveWritesThePlan) {
  std::string out = root_ + "/plan.json";
  CliRun r = ootci({"plan", "resolve", "--config", root_ + "/backend/ootci.yaml", "-o", out}, env_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + out + ": 1 files, 1 rules\n");
  json plan = json::parse(read_file(out));
  EXPECT_EQ(plan["schema"], "ootci.plan");
  EXPECT_EQ(plan["version"], 1);
  EXPECT_EQ(plan["backend"]["pythonpath"], json::array({root_ + "/backend"}));
  EXPECT_EQ(plan["upstream"]["torch_root"], root_ + "/torch");
  EXPECT_EQ(plan["upstream"]["device_root"], root_ + "/backend");
  EXPECT_EQ(plan["configs"][0]["path"], root_ + "/backend/configs/a.yaml");
  ASSERT_EQ(plan["files"].size(), 1u);
  const json& f = plan["files"][0];
  EXPECT_EQ(f["relpath"], "test/test_a.py");
  EXPECT_EQ(f["sha256"], sha256_hex("def test_x(): pass\n"));
  EXPECT_EQ(f["unlisted_test_mode"], "xfail");
  EXPECT_EQ(f["labels"], json::array({"trunk"}));
  ASSERT_EQ(f["rules"].size(), 1u);
  EXPECT_EQ(f["rules"][0]["class"], "TestA");
  EXPECT_EQ(f["rules"][0]["dtypes"]["exclude"], json::array({"float16"}));
  EXPECT_EQ(f["rules"][0]["source"], root_ + "/backend/configs/a.yaml:7:19");
}

TEST_F(PlanCliResolve, ResolveErrorsExit1AndWriteNothing) {
  write_file(root_ + "/backend/configs/b.yaml",
             "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_nope.py\n");
  std::string out = root_ + "/plan.json";
  CliRun r = ootci({"plan", "resolve", "--config", root_ + "/backend/ootci.yaml", "-o", out}, env_);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), Lines{root_ +
                                "/backend/configs/b.yaml:3:13: "
                                "test_suite_config.files[0].path: no file matches '" +
                                root_ + "/torch/test/test_nope.py'"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(PlanCliResolve, EnvResolvesIntoTheWorkspaceAndPrintsExports) {
  CliRun r = ootci({"plan", "env", "--config", root_ + "/backend/ootci.yaml"}, env_);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string plan = root_ + "/backend/.ootci/plan.json";
  EXPECT_TRUE(std::filesystem::exists(plan));
  EXPECT_EQ(lines(r.out),
            (Lines{
                "export OOTCI_PLAN='" + plan + "'",
                "export PYTEST_PLUGINS='ootci_torch.pytest_plugin'",
                "export PYTHONPATH='" + root_ + "/py:" + root_ + "/backend:" + root_ + "/py/shims'",
                "export PYTORCH_TESTING_DEVICE_ONLY_FOR='privateuseone'",
                "export QUOTED='it'\\''s'",
                "export TORCH_DEVICE_ROOT='" + root_ + "/backend'",
                "export TORCH_ROOT='" + root_ + "/torch'",
                "export TORCH_TEST_DEVICES='" + root_ + "/py/ootci_torch/device_base.py'",
            }));
}

TEST_F(PlanCliResolve, EnvWithAPlanAndJson) {
  std::string plan = root_ + "/mine.json";
  ASSERT_EQ(
      ootci({"plan", "resolve", "--config", root_ + "/backend/ootci.yaml", "-o", plan}, env_).code,
      0);
  env_["PYTHONPATH"] = "/site";
  CliRun r = ootci(
      {"plan", "env", "--config", root_ + "/backend/ootci.yaml", "--plan", plan, "--json"}, env_);
  ASSERT_EQ(r.code, 0) << r.err;
  json env = json::parse(r.out);
  EXPECT_EQ(env["OOTCI_PLAN"], plan);
  EXPECT_EQ(env["PYTHONPATH"], root_ + "/py:" + root_ + "/backend:" + root_ + "/py/shims:/site");
  EXPECT_EQ(env["QUOTED"], "it's");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/backend/.ootci"));  // nothing resolved

  write_file(root_ + "/other.json", R"({"schema": "something.else", "version": 1})");
  CliRun wrong = ootci(
      {"plan", "env", "--config", root_ + "/backend/ootci.yaml", "--plan", root_ + "/other.json"},
      env_);
  EXPECT_EQ(wrong.code, 1);
  EXPECT_EQ(wrong.err, "error: " + root_ + "/other.json: not an ootci.plan version 1 file\n");
}

}  // namespace
}  // namespace ootci
