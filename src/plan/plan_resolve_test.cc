#include "plan/plan_resolve.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/sha256.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

// A fake torch checkout and a backend folder holding test-suite configs.
class PlanResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(make_temp_dir()).string();
    torch_ = root_ + "/torch";
    device_ = root_ + "/backend";
    for (const char* d : {"/torch/test/nn", "/backend/configs", "/backend/tests"})
      std::filesystem::create_directories(root_ + d);
    write_file(torch_ + "/test/test_a.py", "# test_a\n");
    write_file(torch_ + "/test/test_b.py", "# test_b\n");
    write_file(torch_ + "/test/nn/test_nn.py", "# test_nn\n");
    write_file(device_ + "/tests/test_dev.py", "# test_dev\n");
    backend_.path = device_ + "/ootci.yaml";
    backend_.dir = device_;
    backend_.name = "reference";
    backend_.device_type = "privateuseone";
    backend_.modules = {"ootci_reference_backend"};
    backend_.pythonpath = {device_};
    backend_.env = {{"K", "V"}};
    backend_.torch_root = torch_;
    backend_.device_root = device_;
    backend_.workspace = device_ + "/.ootci";
  }

  // Writes configs/<name> and adds it to test_configs; returns its path.
  std::string config(const std::string& name, const std::string& yaml) {
    std::string path = device_ + "/configs/" + name;
    write_file(path, yaml);
    backend_.test_configs.push_back(path);
    backend_.test_config_where.push_back(backend_.path + ":9:5");
    return path;
  }

  PlanResult resolve_ok() {
    PlanResult r = resolve_plan(backend_);
    EXPECT_EQ(r.errors, Lines{});
    return r;
  }

  static const json& file_named(const json& plan, const std::string& relpath) {
    for (const auto& f : plan["files"])
      if (f["relpath"] == relpath) return f;
    static const json none;
    ADD_FAILURE() << "no file " << relpath;
    return none;
  }

  std::string root_, torch_, device_;
  BackendConfig backend_;
};

TEST_F(PlanResolve, PlanJsonVersion1) {
  std::string cfg = config("view.yaml", R"(test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      unlisted_test_mode: skip
      tests:
        - names: [TestOldViewOps::test_broadcast_to]
          edits:
            ops: {include: [{name: add}], exclude: [{name: gcd}]}
            dtypes: {include: [{name: float32}], exclude: [{name: bool}, {name: int64}]}
        - names: [test_view_.*]
          mode: xfail
          tags: [model_1]
          precision: {atol: 1e-3}
          selectors: {include: [{has_ops: true}]}
  global:
    supported_ops:
      - name: add
        dtypes: [{name: half, precision: {atol: 1e-3, rtol: 1e-3}}]
      - mul
    devices: [cpu]
)");
  PlanResult r = resolve_ok();
  const json& p = r.plan;
  EXPECT_EQ(p["schema"], "ootci.plan");
  EXPECT_EQ(p["version"], 1);
  EXPECT_EQ(p["backend"], json::parse(R"({"name": "reference", "device_type": "privateuseone",
      "python": "/usr/bin/python3", "modules": ["ootci_reference_backend"],
      "pythonpath": [")" + device_ + R"("], "env": {"K": "V"}})"));
  EXPECT_EQ(p["upstream"], (json{{"torch_root", torch_}, {"device_root", device_}}));
  EXPECT_EQ(p["configs"], (json::array({{{"path", cfg}, {"sha256", sha256_hex(read_file(cfg))}}})));
  ASSERT_EQ(p["files"].size(), 1u);
  const json& f = p["files"][0];
  EXPECT_EQ(f["path"], torch_ + "/test/test_a.py");
  EXPECT_EQ(f["relpath"], "test/test_a.py");
  EXPECT_EQ(f["sha256"], sha256_hex("# test_a\n"));
  EXPECT_EQ(f["declared_as"], json::array({"${TORCH_ROOT}/test/test_a.py"}));
  EXPECT_EQ(f["configs"], json::array({0}));
  EXPECT_EQ(f["labels"], json::array({"trunk"}));
  EXPECT_EQ(f["unlisted_test_mode"], "skip");
  EXPECT_EQ(f["supported_dtypes"], nullptr);
  EXPECT_EQ(f["supported_ops"], json::parse(R"([
      {"name": "add", "force_xfail": false,
       "dtypes": [{"name": "float16", "precision": {"atol": 0.001, "rtol": 0.001},
                   "force_xfail": false}]},
      {"name": "mul", "force_xfail": false, "dtypes": null}])"));
  EXPECT_EQ(f["extra"], json::parse(R"({"devices": ["cpu"]})"));
  EXPECT_EQ(f["supported_modules"], nullptr);
  ASSERT_EQ(f["rules"].size(), 2u);
  EXPECT_EQ(f["rules"][0], json::parse(R"({
      "class": "TestOldViewOps", "method": "test_broadcast_to", "exact": true,
      "mode": "mandatory_success", "tags": [], "labels": [], "no_grad": false,
      "precision": null,
      "ops": {"include": [{"name": "add", "tags": []}], "exclude": ["gcd"]},
      "dtypes": {"include": [{"name": "float32", "precision": null, "force_xfail": false}],
                 "exclude": ["bool", "int64"]},
      "cpu_move": [],
      "modules": {"include": [], "exclude": []},
      "extra": {},
      "source": ")" + cfg + R"(:7:19"})"));
  EXPECT_EQ(f["rules"][1]["class"], nullptr);
  EXPECT_EQ(f["rules"][1]["method"], "test_view_.*");
  EXPECT_EQ(f["rules"][1]["exact"], false);
  EXPECT_EQ(f["rules"][1]["mode"], "xfail");
  EXPECT_EQ(f["rules"][1]["tags"], json::array({"model_1"}));
  EXPECT_EQ(f["rules"][1]["precision"], json::parse(R"({"atol": 0.001, "rtol": null})"));
  EXPECT_EQ(f["rules"][1]["extra"],
            json::parse(R"({"selectors": {"include": [{"has_ops": true}]}})"));
  EXPECT_EQ(r.file_count, 1u);
  EXPECT_EQ(r.rule_count, 2u);
}

TEST_F(PlanResolve, SamePathInTwoConfigsIsCombinedInConfigOrder) {
  config("one.yaml", R"(test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      tests:
        - names: [A::test_one]
)");
  config("two.yaml", R"(test_suite_config:
  labels: [nightly]
  files:
    - path: ${TORCH_ROOT}/test/../test/test_a.py
      unlisted_test_mode: xfail
      tests:
        - names: [A::test_two]
          mode: skip
)");
  PlanResult r = resolve_ok();
  ASSERT_EQ(r.plan["files"].size(), 1u);
  const json& f = r.plan["files"][0];
  EXPECT_EQ(f["configs"], json::array({0, 1}));
  EXPECT_EQ(f["declared_as"],
            json::array({"${TORCH_ROOT}/test/test_a.py", "${TORCH_ROOT}/test/../test/test_a.py"}));
  EXPECT_EQ(f["labels"], json::array({"nightly", "trunk"}));
  EXPECT_EQ(f["unlisted_test_mode"], "xfail");  // the one value set
  ASSERT_EQ(f["rules"].size(), 2u);
  EXPECT_EQ(f["rules"][0]["method"], "test_one");
  EXPECT_EQ(f["rules"][1]["method"], "test_two");
}

TEST_F(PlanResolve, IdenticalRuleIsDropped) {
  const char* yaml = R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      tests:
        - names: [A::test_one, A::test_two]
          mode: xfail
)";
  std::string first = config("one.yaml", yaml);
  config("two.yaml", yaml);
  PlanResult r = resolve_ok();
  const json& rules = r.plan["files"][0]["rules"];
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0]["source"], first + ":5:19");
  EXPECT_EQ(rules[1]["source"], first + ":5:32");
}

// Spyre warns and keeps the first; refusing a real tree for it would be stricter than Spyre.
TEST_F(PlanResolve, UnlistedTestModeConflictWarnsWithBothPlacesAndTheFirstApplies) {
  std::string one = config("one.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      unlisted_test_mode: skip
)");
  std::string two = config("two.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      unlisted_test_mode: xfail
)");
  PlanResult r = resolve_ok();
  EXPECT_EQ(r.warnings, Lines{two +
                              ":4:27: test_suite_config.files[0].unlisted_test_mode: conflicting "
                              "unlisted_test_mode for test/test_a.py: xfail here but skip at " +
                              one + ":4:27; the first one applies"});
  EXPECT_EQ(file_named(r.plan, "test/test_a.py")["unlisted_test_mode"], "skip");
}

TEST_F(PlanResolve, AnEmptySupportedDtypesFiltersNothingAndTheDefaultModeIsXfail) {
  config("one.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
      labels: [unit]
  global:
    supported_dtypes: []
)");
  PlanResult r = resolve_ok();
  const json& a = file_named(r.plan, "test/test_a.py");
  EXPECT_EQ(a["supported_dtypes"], nullptr);
  EXPECT_EQ(a["unlisted_test_mode"], "xfail");
  EXPECT_EQ(a["labels"], json::array({"unit"}));
}

TEST_F(PlanResolve, GlobalIsMergedPerFileAndDoesNotLeakToOtherFiles) {
  config("one.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
  global:
    supported_ops: [add]
)");
  config("two.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
    - path: ${TORCH_ROOT}/test/test_b.py
  global:
    supported_dtypes: [{name: float32}]
    supported_ops: [mul, add]
)");
  config("three.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/test_dev.py
  global:
    supported_ops: [{name: relu, dtypes: [{name: float16}]}]
)");
  config("four.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/test_dev.py
  global:
    supported_ops: [{name: relu, dtypes: [{name: bfloat16}]}]
)");
  PlanResult r = resolve_ok();
  auto names = [](const json& ops) {
    Lines out;
    for (const auto& op : ops) out.push_back(op["name"]);
    return out;
  };
  const json& a = file_named(r.plan, "test/test_a.py");
  EXPECT_EQ(names(a["supported_ops"]), (Lines{"add", "mul"}));
  // One config omits supported_dtypes, the other declares it: the declared list applies.
  EXPECT_EQ(a["supported_dtypes"], json::parse(R"([{"name": "float32", "precision": null,
      "force_xfail": false}])"));
  const json& b = file_named(r.plan, "test/test_b.py");
  EXPECT_EQ(names(b["supported_ops"]), (Lines{"mul", "add"}));
  EXPECT_EQ(b["configs"], json::array({1}));
  const json& dev = file_named(r.plan, "tests/test_dev.py");  // relative to device_root
  EXPECT_EQ(dev["supported_dtypes"], nullptr);
  ASSERT_EQ(dev["supported_ops"].size(), 1u);
  EXPECT_EQ(dev["supported_ops"][0]["dtypes"].size(), 2u);  // float16 and bfloat16 for relu
}

TEST_F(PlanResolve, ConflictingGlobalPrecisionWarnsAndTheFirstApplies) {
  std::string one = config("one.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
  global:
    supported_dtypes: [{name: float16, precision: {atol: 1e-3}}]
)");
  std::string two = config("two.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
  global:
    supported_dtypes: [{name: half, precision: {atol: 1e-2}}]
)");
  PlanResult r = resolve_ok();
  EXPECT_EQ(r.warnings,
            (Lines{two +
                   ":5:24: test_suite_config.global.supported_dtypes[0]: conflicting precision "
                   "for dtype 'float16' in test/test_a.py: {\"atol\":0.01,\"rtol\":null} here "
                   "but {\"atol\":0.001,\"rtol\":null} at " +
                   one + ":5:24; the first one applies"}));
  EXPECT_EQ(file_named(r.plan, "test/test_a.py")["supported_dtypes"][0]["precision"]["atol"],
            0.001);
}

// A setting given by one declaration only is not a conflict: Spyre's example config and its
// test_binary_ufuncs.yaml both declare add, one of them with a precision.
TEST_F(PlanResolve, OneSidedGlobalSettingsMerge) {
  config("one.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
  global:
    supported_dtypes: [{name: float16}]
    supported_ops: [{name: add, force_xfail: true, dtypes: [{name: float16}]}]
)");
  config("two.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
  global:
    supported_dtypes: [{name: float16, precision: {atol: 1e-2}}]
    supported_ops: [{name: add, dtypes: [{name: float16, precision: {rtol: 0.5}}]}]
)");
  PlanResult r = resolve_ok();
  const json& a = file_named(r.plan, "test/test_a.py");
  EXPECT_EQ(a["supported_dtypes"][0]["precision"], json::parse(R"({"atol":0.01,"rtol":null})"));
  EXPECT_EQ(a["supported_ops"][0]["force_xfail"], true);
  EXPECT_EQ(a["supported_ops"][0]["dtypes"][0]["precision"],
            json::parse(R"({"atol":null,"rtol":0.5})"));
}

TEST_F(PlanResolve, DoubleStarGlobMatchesEveryFolder) {
  config("all.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/**/test_*.py
      tests:
        - names: [test_.*]
)");
  PlanResult r = resolve_ok();
  Lines relpaths;
  for (const auto& f : r.plan["files"]) {
    relpaths.push_back(f["relpath"]);
    EXPECT_EQ(f["declared_as"], json::array({"${TORCH_ROOT}/test/**/test_*.py"}));
    EXPECT_EQ(f["rules"].size(), 1u);
  }
  EXPECT_EQ(relpaths, (Lines{"test/nn/test_nn.py", "test/test_a.py", "test/test_b.py"}));
}

TEST_F(PlanResolve, PathMatchingNothingIsAnErrorAtItsLine) {
  std::string cfg = config("missing.yaml", R"(test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_a.py
    - path: ${TORCH_ROOT}/test/test_zzz.py
    - path: ${PYTORCH}/test/test_a.py
)");
  PlanResult r = resolve_plan(backend_);
  EXPECT_EQ(r.errors,
            (Lines{cfg + ":4:13: test_suite_config.files[1].path: no file matches '" + torch_ +
                       "/test/test_zzz.py'",
                   cfg + ":5:13: test_suite_config.files[2].path: unknown token '${PYTORCH}' "
                         "(expected ${TORCH_ROOT} or ${TORCH_DEVICE_ROOT})"}));
}

TEST_F(PlanResolve, ErrorsOfEveryConfigAreReportedTogether) {
  std::string one = config("one.yaml", "test_suite_config:\n  files: [{path: a.py, mode: x}]\n");
  std::string two = config("two.yaml", "test_suite_config:\n  fils: []\n");
  backend_.test_configs.push_back(device_ + "/configs/none-*.yaml");
  backend_.test_config_where.push_back(backend_.path + ":12:5");
  PlanResult r = resolve_plan(backend_, /*strict=*/true);
  EXPECT_EQ(r.errors, (Lines{one + ":2:24: test_suite_config.files[0].mode: unknown key",
                             two + ":2:3: test_suite_config: missing required key 'files'",
                             two + ":2:3: test_suite_config.fils: unknown key",
                             backend_.path + ":12:5: test_configs[2]: no file matches '" + device_ +
                                 "/configs/none-*.yaml'"}));
  // Without --strict the unknown keys are warnings and only real errors remain.
  PlanResult lenient = resolve_plan(backend_);
  EXPECT_EQ(lenient.errors.size(), 2u);
  EXPECT_EQ(lenient.warnings.size(), 2u);
}

TEST_F(PlanResolve, ConfigGlobsAreSortedAndReadOnce) {
  const char* yaml = "test_suite_config:\n  files: [{path: '${TORCH_ROOT}/test/test_a.py'}]\n";
  write_file(device_ + "/configs/b.yaml", yaml);
  write_file(device_ + "/configs/a.yaml", yaml);
  backend_.test_configs = {device_ + "/configs/*.yaml", device_ + "/configs/a.yaml"};
  backend_.test_config_where = {"x:1:1", "x:2:1"};
  PlanResult r = resolve_ok();
  ASSERT_EQ(r.plan["configs"].size(), 2u);
  EXPECT_EQ(r.plan["configs"][0]["path"], device_ + "/configs/a.yaml");
  EXPECT_EQ(r.plan["configs"][1]["path"], device_ + "/configs/b.yaml");
}

TEST(PlanRelpath, UnderTorchRootElseDeviceRootElseAbsolute) {
  EXPECT_EQ(plan_relpath("/t/test/a.py", "/t", "/d"), "test/a.py");
  EXPECT_EQ(plan_relpath("/d/tests/a.py", "/t", "/d"), "tests/a.py");
  EXPECT_EQ(plan_relpath("/tx/a.py", "/t", "/d"), "/tx/a.py");
}

TEST(WritePlan, WritesAtomicallyAndCreatesTheFolder) {
  std::string dir = make_temp_dir();
  std::string path = dir + "/ws/plan.json";
  write_plan(json{{"schema", "ootci.plan"}}, path);
  EXPECT_EQ(json::parse(read_file(path))["schema"], "ootci.plan");
  write_plan(json{{"schema", "ootci.plan"}, {"version", 1}}, path);
  EXPECT_EQ(json::parse(read_file(path))["version"], 1);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir + "/ws")) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
}

}  // namespace
}  // namespace ootci
