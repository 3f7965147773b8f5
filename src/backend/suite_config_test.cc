#include "backend/suite_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_env.h"

namespace ootci {
namespace {

using Lines = std::vector<std::string>;

SuiteConfigResult parse(const std::string& yaml) {
  YamlDoc doc = load_yaml_text("c.yaml", yaml);
  return parse_suite_config(doc);
}

struct BadConfig {
  std::string what;
  std::string yaml;
  Lines errors;
};

// Each case is what `ootci plan check` prints for one small config.
const std::vector<BadConfig> kBadConfigs = {
    {"unknown key",
     R"(test_suite_config:
  files:
    - path: a.py
      unlisted: skip
)",
     {"c.yaml:4:7: test_suite_config.files[0].unlisted: unknown key"}},
    {"unknown key at the top",
     R"(test_suite_config:
  files: [{path: a.py}]
test_suite_confg: {}
)",
     {"c.yaml:3:1: test_suite_confg: unknown key"}},
    {"wrong types",
     R"(test_suite_config:
  labels: trunk
  files:
    - path: [a.py]
      tests:
        - names: [A::test_a]
          no_grad: 3
          precision: {atol: tiny}
          tags: {a: b}
  global: [1]
)",
     {"c.yaml:2:11: test_suite_config.labels: expected a list",
      "c.yaml:4:13: test_suite_config.files[0].path: expected a string",
      "c.yaml:7:20: test_suite_config.files[0].tests[0].no_grad: expected true or false",
      "c.yaml:8:29: test_suite_config.files[0].tests[0].precision.atol: expected a number",
      "c.yaml:9:17: test_suite_config.files[0].tests[0].tags: expected a list",
      "c.yaml:10:11: test_suite_config.global: expected a mapping"}},
    {"a list item of the wrong type",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [A::test_a, [A::test_b]]
          edits: {dtypes: {exclude: [bool]}}
)",
     {"c.yaml:5:30: test_suite_config.files[0].tests[0].names[1]: expected a string",
      "c.yaml:6:38: test_suite_config.files[0].tests[0].edits.dtypes.exclude[0]: expected a "
      "mapping"}},
    {"unknown dtype",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [A::test_a]
          edits:
            dtypes:
              exclude: [{name: float8}]
)",
     {"c.yaml:8:32: test_suite_config.files[0].tests[0].edits.dtypes.exclude[0].name: unknown "
      "dtype 'float8' (expected one of float16, float32, float64, bfloat16, half, int8, int16, "
      "int32, int64, uint8, uint16, uint32, uint64, complex32, complex64, complex128, bool)"}},
    {"unknown dtype in global",
     R"(test_suite_config:
  files: [{path: a.py}]
  global:
    supported_ops:
      - name: add
        dtypes: [{name: float128}]
)",
     {"c.yaml:6:25: test_suite_config.global.supported_ops[0].dtypes[0].name: unknown dtype "
      "'float128' (expected one of float16, float32, float64, bfloat16, half, int8, int16, int32, "
      "int64, uint8, uint16, uint32, uint64, complex32, complex64, complex128, bool)"}},
    {"invalid regex",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: ["TestA::test_("]
)",
     {"c.yaml:5:19: test_suite_config.files[0].tests[0].names[0]: invalid regex 'test_(': "
      "Mismatched '(' and ')' in regular expression"}},
    {"invalid names",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [A::b::c, "::test_a", "A::", Not-a-class::test_a]
)",
     {"c.yaml:5:19: test_suite_config.files[0].tests[0].names[0]: invalid test name 'A::b::c' "
      "(expected Class::method or method)",
      "c.yaml:5:28: test_suite_config.files[0].tests[0].names[1]: invalid test name '::test_a' "
      "(expected Class::method or method)",
      "c.yaml:5:40: test_suite_config.files[0].tests[0].names[2]: invalid test name 'A::' "
      "(expected Class::method or method)",
      "c.yaml:5:47: test_suite_config.files[0].tests[0].names[3]: invalid test name "
      "'Not-a-class::test_a' (expected Class::method or method)"}},
    {"invalid tags",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [A::test_a]
          tags: [model_1, x-y, 2fast]
          edits:
            ops:
              include: [{name: add, tags: ["has space"]}]
)",
     {"c.yaml:6:27: test_suite_config.files[0].tests[0].tags[1]: tag 'x-y' is not a valid "
      "identifier",
      "c.yaml:6:32: test_suite_config.files[0].tests[0].tags[2]: tag '2fast' is not a valid "
      "identifier",
      "c.yaml:9:44: test_suite_config.files[0].tests[0].edits.ops.include[0].tags[0]: tag 'has "
      "space' is not a valid identifier"}},
    {"conflicting duplicate",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [C::m]
          mode: xfail
        - names: [C::m]
          mode: skip
)",
     {"c.yaml:7:19: test_suite_config.files[0].tests[1].names[0]: conflicting duplicate: 'C::m' "
      "is mode skip here but xfail at c.yaml:5:19"}},
    {"missing names",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - mode: skip
        - names:
)",
     {"c.yaml:5:11: test_suite_config.files[0].tests[0]: missing required key 'names'",
      "c.yaml:6:11: test_suite_config.files[0].tests[1]: missing required key 'names'"}},
    {"missing keys elsewhere",
     R"(test_suite_config:
  files:
    - unlisted_test_mode: skip
  global:
    supported_dtypes: [{description: no name}]
)",
     {"c.yaml:3:7: test_suite_config.files[0]: missing required key 'path'",
      "c.yaml:5:24: test_suite_config.global.supported_dtypes[0]: missing required key 'name'"}},
    {"no files",
     "test_suite_config:\n  labels: [trunk]\n",
     {"c.yaml:2:3: test_suite_config: missing required key 'files'"}},
    {"not a suite config",
     "other: 1\n",
     {"c.yaml:1:1: missing required key 'test_suite_config'", "c.yaml:1:1: other: unknown key"}},
    {"not a mapping at all", "- a\n", {"c.yaml:1:1: (root): expected a mapping"}},
    {"bad unlisted_test_mode",
     R"(test_suite_config:
  files:
    - path: a.py
      unlisted_test_mode: xfial
)",
     {"c.yaml:4:27: test_suite_config.files[0].unlisted_test_mode: unknown mode 'xfial' "
      "(expected mandatory_success, xfail, xfail_strict or skip)"}},
    {"several errors in one file, all reported in file order",
     R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [A::test_a]
          mode: xfial
          colour: red
        - names: [A::b::c]
    - path: b.py
      unlisted_test_mode: never
  global:
    supported_dtypes: [{name: float8}]
    supported_ops: [add, {name: mul, force_xfail: sometimes}]
)",
     {"c.yaml:6:17: test_suite_config.files[0].tests[0].mode: unknown mode 'xfial' (expected "
      "mandatory_success, xfail, xfail_strict or skip)",
      "c.yaml:7:11: test_suite_config.files[0].tests[0].colour: unknown key",
      "c.yaml:8:19: test_suite_config.files[0].tests[1].names[0]: invalid test name 'A::b::c' "
      "(expected Class::method or method)",
      "c.yaml:10:27: test_suite_config.files[1].unlisted_test_mode: unknown mode 'never' "
      "(expected mandatory_success, xfail, xfail_strict or skip)",
      "c.yaml:12:31: test_suite_config.global.supported_dtypes[0].name: unknown dtype 'float8' "
      "(expected one of float16, float32, float64, bfloat16, half, int8, int16, int32, int64, "
      "uint8, uint16, uint32, uint64, complex32, complex64, complex128, bool)",
      "c.yaml:13:51: test_suite_config.global.supported_ops[1].force_xfail: expected true or "
      "false"}},
};

TEST(SuiteConfig, BadConfigsReportEveryErrorWithFileLineAndPath) {
  for (const auto& c : kBadConfigs) {
    SCOPED_TRACE(c.what);
    SuiteConfigResult r = parse(c.yaml);
    EXPECT_EQ(r.errors, c.errors);
    EXPECT_FALSE(r.ok());
  }
}

TEST(SuiteConfig, SameModeDuplicateIsOnlyAWarning) {
  SuiteConfigResult r = parse(R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [C::m]
        - names: [C::m]
          mode: mandatory_success
)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.warnings,
            (Lines{"c.yaml:6:19: test_suite_config.files[0].tests[1].names[0]: duplicate 'C::m' "
                   "(also listed at c.yaml:5:19 with the same mode)"}));
  EXPECT_EQ(r.config.rule_count(), 2u);
}

TEST(SuiteConfig, UnreadableFileIsAnErrorNotAnException) {
  SuiteConfigResult r = load_suite_config("/nonexistent/c.yaml");
  EXPECT_EQ(r.errors, (Lines{"/nonexistent/c.yaml: cannot open file"}));
  SuiteConfigResult bad = parse_suite_config(load_yaml_text("ok.yaml", "a: 1\n"));
  EXPECT_FALSE(bad.ok());
}

TEST(SuiteConfig, ReadsEveryKeyOfTheSchema) {
  SuiteConfigResult r = parse(R"(test_suite_config:
  labels: [trunk, nightly]
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      unlisted_test_mode: xfail_strict
      tests:
        - names: [TestOldViewOps::test_broadcast_to, test_view_.*]
          mode: xfail
          tags: [model_1]
          labels: [smoke]
          no_grad: true
          precision: {atol: 1e-3}
          edits:
            ops: {include: [{name: add, tags: [t]}], exclude: [{name: gcd, description: why}]}
            dtypes:
              include: [{name: half, precision: {atol: 1e-2, rtol: 0.5}, force_xfail: true}]
              exclude: [{name: bool}]
            functions: {cpu_move: [{name: assertEqual}]}
            modules: {include: [{name: torch.nn.Linear}]}
            inputs: {seed: 3}
          selectors: {include: [{has_ops: true}]}
  global:
    supported_dtypes: [{name: float32, description: d, force_xfail: true, precision: {rtol: 2}}]
    supported_ops:
      - realdiv
      - name: add
        force_xfail: true
        dtypes: [{name: half, precision: {atol: 1e-3, rtol: 1e-3}, force_xfail: false}]
    supported_modules: [{name: torch.nn.Linear}]
    input_config: {seed: 0}
    devices: [cpu, spyre]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0];
  const SuiteConfig& c = r.config;
  EXPECT_EQ(c.labels, (Lines{"trunk", "nightly"}));
  ASSERT_EQ(c.files.size(), 1u);
  const FileEntry& f = c.files[0];
  EXPECT_EQ(f.path, "${TORCH_ROOT}/test/test_view_ops.py");
  EXPECT_EQ(f.path_where, "c.yaml:4:13");
  EXPECT_EQ(f.unlisted_test_mode, TestMode::xfail_strict);
  ASSERT_EQ(f.rules.size(), 2u);
  const Rule& a = f.rules[0];
  EXPECT_EQ(a.class_name, "TestOldViewOps");
  EXPECT_EQ(a.method, "test_broadcast_to");
  EXPECT_EQ(a.source, "c.yaml:7:19");
  EXPECT_EQ(a.mode, TestMode::xfail);
  EXPECT_EQ(a.tags, (Lines{"model_1"}));
  EXPECT_EQ(a.labels, (Lines{"smoke"}));
  EXPECT_TRUE(a.no_grad);
  EXPECT_EQ(a.precision, (Precision{1e-3, std::nullopt}));
  EXPECT_EQ(a.ops_include, (std::vector<OpInclude>{{"add", {"t"}}}));
  EXPECT_EQ(a.ops_exclude, (Lines{"gcd"}));
  ASSERT_EQ(a.dtypes_include.size(), 1u);
  EXPECT_EQ(a.dtypes_include[0].name, "float16");  // half is canonicalised
  EXPECT_EQ(a.dtypes_include[0].precision, (Precision{1e-2, 0.5}));
  EXPECT_TRUE(a.dtypes_include[0].force_xfail);
  EXPECT_EQ(a.dtypes_exclude, (Lines{"bool"}));
  EXPECT_EQ(a.cpu_move, (Lines{"assertEqual"}));
  EXPECT_EQ(a.extra,
            nlohmann::json::parse(R"({"modules": {"include": [{"name": "torch.nn.Linear"}]},
      "inputs": {"seed": 3}, "selectors": {"include": [{"has_ops": true}]}})"));
  const Rule& b = f.rules[1];
  EXPECT_FALSE(b.class_name);
  EXPECT_EQ(b.method, "test_view_.*");
  EXPECT_EQ(b.source, "c.yaml:7:54");

  const GlobalConfig& g = c.global;
  ASSERT_TRUE(g.supported_dtypes);
  EXPECT_EQ((*g.supported_dtypes)[0].name, "float32");
  EXPECT_TRUE((*g.supported_dtypes)[0].force_xfail);
  EXPECT_EQ((*g.supported_dtypes)[0].precision, (Precision{std::nullopt, 2}));
  ASSERT_TRUE(g.supported_ops);
  ASSERT_EQ(g.supported_ops->size(), 2u);
  EXPECT_EQ((*g.supported_ops)[0].name, "realdiv");
  EXPECT_FALSE((*g.supported_ops)[0].dtypes);
  EXPECT_EQ((*g.supported_ops)[1].name, "add");
  EXPECT_TRUE((*g.supported_ops)[1].force_xfail);
  ASSERT_TRUE((*g.supported_ops)[1].dtypes);
  EXPECT_EQ((*(*g.supported_ops)[1].dtypes)[0].name, "float16");
  EXPECT_EQ(g.extra, nlohmann::json::parse(R"({"supported_modules": [{"name": "torch.nn.Linear"}],
      "input_config": {"seed": 0}, "devices": ["cpu", "spyre"]})"));
}

TEST(SuiteConfig, DefaultsFollowTheRfc) {
  SuiteConfigResult r = parse(
      "test_suite_config:\n  files:\n    - path: a.py\n      tests:\n"
      "        - names: A::test_a\n");
  ASSERT_TRUE(r.ok()) << r.errors[0];
  EXPECT_EQ(r.config.labels, (Lines{"full"}));
  EXPECT_FALSE(r.config.files[0].unlisted_test_mode);
  ASSERT_EQ(r.config.files[0].rules.size(), 1u);  // Spyre allows a single name as a string
  EXPECT_EQ(r.config.files[0].rules[0].mode, TestMode::mandatory_success);
  EXPECT_FALSE(r.config.global.supported_dtypes);
  EXPECT_FALSE(r.config.global.supported_ops);
}

TEST(SuiteConfig, EveryRealSpyreConfigValidates) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(fixture_path("spyre-configs")))
    if (e.path().extension() == ".yaml") paths.push_back(e.path().string());
  ASSERT_GE(paths.size(), 9u);
  for (const auto& p : paths) {
    SCOPED_TRACE(p);
    SuiteConfigResult r = load_suite_config(p);
    EXPECT_EQ(r.errors, Lines{});
    EXPECT_GT(r.config.rule_count(), 0u);
  }
}

}  // namespace
}  // namespace ootci
