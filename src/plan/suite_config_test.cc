#include "plan/suite_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_env.h"

namespace ootci {
namespace {

using Lines = std::vector<std::string>;

SuiteConfigResult parse(const std::string& yaml, bool strict = false) {
  YamlDoc doc = load_yaml_text("c.yaml", yaml);
  return parse_suite_config(doc, strict);
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
        - names: [A::test_a]
          tags: [model__gpt-oss-20b, torch.mul.1_spyre, [nested]]
)",
     {"c.yaml:6:57: test_suite_config.files[0].tests[0].tags[2]: expected a string"}},
    {"tensor specs: negative dimension, unknown init, randint without high, bad dtype",
     R"(test_suite_config:
  files:
    - path: m.py
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          edits:
            ops:
              include:
                - name: torch.mul
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [2, -3], dtype: torch.float16, init: rand}
                      - tensor: {shape: [4], dtype: float16, init: gaussian}
                      - tensor: {shape: [4], dtype: torch.int64, init: randint}
                      - tensor: {shape: [4], dtype: torch.float8}
                      - tensor: {shape: [4], dtype: float32, colour: red}
                      - tensor: {shape: [2, 2], dtype: float32, init: arange}
                      - tensor_list: [{shape: [1], dtype: float32, init: full}]
                      - {value: 1, py: "2"}
                      - cache: {layer_idx: 0}
)",
     {"c.yaml:12:45: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[0].tensor.shape[1]: must be at least 0, not -3",
      "c.yaml:13:68: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[1].tensor.init: unknown init 'gaussian' (expected one of rand, randn, randint, full, "
      "zeros, ones, arange, eye, xavier, file)",
      "c.yaml:14:33: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[2].tensor.init_args: init 'randint' needs init_args.high",
      "c.yaml:15:53: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[3].tensor.dtype: unknown dtype 'torch.float8' (expected one of float16, float32, "
      "float64, bfloat16, half, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
      "complex32, complex64, complex128, bool, optionally as torch.<name>)",
      "c.yaml:16:62: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[4].tensor.colour: unknown key",
      "c.yaml:17:41: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[5].tensor.shape: init 'arange' needs a 1-D shape, not 2 dimensions",
      "c.yaml:18:39: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[6].tensor_list[0].init_args: init 'full' needs init_args.fill_value",
      "c.yaml:19:25: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[7]: expected a mapping with one of tensor, tensor_list, value, py, config, module, "
      "cache",
      "c.yaml:20:32: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[8].cache: missing required key 'cache_path'",
      "c.yaml:20:32: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[8].cache: missing required key 'key'",
      "c.yaml:20:32: test_suite_config.files[0].tests[0].edits.ops.include[0].sample_inputs_func"
      ".args[8].cache: missing required key 'value'"}},
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
        - names: [A.*::test_(]
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
      "c.yaml:9:19: test_suite_config.files[0].tests[2].names[0]: invalid regex 'test_(': "
      "Mismatched '(' and ')' in regular expression",
      "c.yaml:11:27: test_suite_config.files[1].unlisted_test_mode: unknown mode 'never' "
      "(expected mandatory_success, xfail, xfail_strict or skip)",
      "c.yaml:13:31: test_suite_config.global.supported_dtypes[0].name: unknown dtype 'float8' "
      "(expected one of float16, float32, float64, bfloat16, half, int8, int16, int32, int64, "
      "uint8, uint16, uint32, uint64, complex32, complex64, complex128, bool)",
      "c.yaml:14:51: test_suite_config.global.supported_ops[1].force_xfail: expected true or "
      "false"}},
};

// Under --strict unknown keys join the errors; inside a tensor spec they are errors anyway.
TEST(SuiteConfig, BadConfigsReportEveryErrorWithFileLineAndPath) {
  for (const auto& c : kBadConfigs) {
    SCOPED_TRACE(c.what);
    SuiteConfigResult r = parse(c.yaml, /*strict=*/true);
    EXPECT_EQ(r.errors, c.errors);
    EXPECT_FALSE(r.ok());
  }
}

// Spyre's models ignore keys they do not know, so by default ootci warns and goes on.
TEST(SuiteConfig, UnknownKeysWarnUnlessStrict) {
  const char* yaml = R"(test_suite_config:
  files:
    - path: a.py
      unlisted: skip
      tests:
        - names: [test_a]
          edits:
            ops:
              include: [{name: torch.arange, sample_inputs_func: {args: [{value: 1}]}, kwargs: {}}]
)";
  SuiteConfigResult r = parse(yaml);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.warnings,
            (Lines{"c.yaml:4:7: test_suite_config.files[0].unlisted: unknown key (ignored)",
                   "c.yaml:9:88: test_suite_config.files[0].tests[0].edits.ops.include[0]."
                   "kwargs: unknown key (ignored)"}));
  SuiteConfigResult strict = parse(yaml, true);
  EXPECT_EQ(strict.errors.size(), 2u);
  EXPECT_TRUE(strict.warnings.empty());
}

// Spyre keeps the first of two entries naming one test with different modes, and matches base
// names only, so `C::m` and `D::m` are the same test.
TEST(SuiteConfig, ConflictingDuplicateWarnsWithBothPlaces) {
  SuiteConfigResult r = parse(R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [C::m]
          mode: xfail
        - names: [D::m]
          mode: skip
)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.warnings,
            (Lines{"c.yaml:7:19: test_suite_config.files[0].tests[1].names[0]: duplicate 'D::m' "
                   "with mode skip here but xfail at c.yaml:5:19: the first one wins (as in "
                   "Spyre) unless a dtype edit selects this one"}));
  EXPECT_EQ(r.config.files[0].rules.size(), 2u);

  // A dtype-restricted entry for the same test is an override for that dtype, not a duplicate.
  SuiteConfigResult dtype_entry = parse(R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [C::m]
          mode: xfail
          edits: {dtypes: {include: [{name: float16}]}}
        - names: [C::m]
)");
  EXPECT_TRUE(dtype_entry.ok());
  EXPECT_TRUE(dtype_entry.warnings.empty()) << dtype_entry.warnings[0];
}

TEST(SuiteConfig, NamesAreExactBaseNamesOrRegexesAndTheClassIsInformative) {
  SuiteConfigResult r = parse(R"(test_suite_config:
  files:
    - path: a.py
      tests:
        - names: [TestA::test_add, LxPlanning.*::test_cat.*_lx_(pointwise|reduction), test_x1]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0];
  const auto& rules = r.config.files[0].rules;
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_TRUE(rules[0].exact);
  EXPECT_EQ(rules[0].method, "test_add");
  EXPECT_FALSE(rules[1].exact);
  EXPECT_EQ(*rules[1].class_name, "LxPlanning.*");
  EXPECT_EQ(rules[1].method, "test_cat.*_lx_(pointwise|reduction)");
  EXPECT_TRUE(rules[2].exact);
  EXPECT_FALSE(rules[2].class_name);
}

TEST(SuiteConfig, ModelOpInputsAndModulesAreCarriedAsWritten) {
  SuiteConfigResult r = parse(R"(test_suite_config:
  labels: [trunk]
  files:
    - path: m.py
      labels: [unit]
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          tags: [model__granite-3.3-8b-instruct]
          edits:
            ops:
              include:
                - name: torch.mul
                  description: x * 12
                  tags: [torch.mul.1]
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [1, 4], stride: [4, 1], dtype: torch.bfloat16, init: rand}
                      - value: 12.0
                    kwargs: {alpha: 1}
            modules:
              include:
                - name: linear_small
                  module_path: torch.nn.Linear
                  constructor_inputs: {args: [{value: 4}, {value: 2}]}
                  forward_inputs:
                    - {args: [{tensor: {shape: [3, 4], dtype: float32}}]}
              exclude: [{name: Conv2d}]
  global:
    input_config: {seed: 123}
    supported_modules: [torch.nn.Linear, {name: torch.nn.ReLU, force_xfail: true}]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0];
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.labels, (Lines{"trunk"}));
  EXPECT_EQ(r.config.files[0].labels, (Lines{"unit"}));
  const Rule& rule = r.config.files[0].rules[0];
  EXPECT_EQ(rule.tags, (Lines{"model__granite-3.3-8b-instruct"}));
  ASSERT_EQ(rule.ops_include.size(), 1u);
  const OpInclude& op = rule.ops_include[0];
  EXPECT_EQ(*op.description, "x * 12");
  EXPECT_EQ(op.sample_inputs_func["args"][1]["value"], 12.0);
  EXPECT_TRUE(op.sample_inputs_func["args"][1]["value"].is_number_float());
  EXPECT_EQ(op.sample_inputs_func["args"][0]["tensor"]["stride"], nlohmann::json({4, 1}));
  EXPECT_EQ(op.sample_inputs_func["kwargs"]["alpha"], 1);
  ASSERT_EQ(rule.modules_include.size(), 1u);
  EXPECT_EQ(rule.modules_include[0]["module_path"], "torch.nn.Linear");
  EXPECT_EQ(rule.modules_exclude, (Lines{"Conv2d"}));
  EXPECT_EQ(r.config.global.extra["input_config"]["seed"], 123);
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
  EXPECT_EQ(f.unlisted_test_mode, TestMode::kXfailStrict);
  ASSERT_EQ(f.rules.size(), 2u);
  const Rule& a = f.rules[0];
  EXPECT_EQ(a.class_name, "TestOldViewOps");
  EXPECT_EQ(a.method, "test_broadcast_to");
  EXPECT_EQ(a.source, "c.yaml:7:19");
  EXPECT_EQ(a.mode, TestMode::kXfail);
  EXPECT_EQ(a.tags, (Lines{"model_1"}));
  EXPECT_EQ(a.labels, (Lines{"smoke"}));
  EXPECT_TRUE(a.no_grad);
  EXPECT_EQ(a.precision, (Precision{1e-3, std::nullopt}));
  EXPECT_EQ(a.ops_include, (std::vector<OpInclude>{{"add", {"t"}, std::nullopt, nullptr}}));
  EXPECT_EQ(a.ops_exclude, (Lines{"gcd"}));
  ASSERT_EQ(a.dtypes_include.size(), 1u);
  EXPECT_EQ(a.dtypes_include[0].name, "float16");  // half is canonicalised
  EXPECT_EQ(a.dtypes_include[0].precision, (Precision{1e-2, 0.5}));
  EXPECT_TRUE(a.dtypes_include[0].force_xfail);
  EXPECT_EQ(a.dtypes_exclude, (Lines{"bool"}));
  EXPECT_EQ(a.cpu_move, (Lines{"assertEqual"}));
  EXPECT_EQ(a.modules_include, (std::vector<nlohmann::json>{{{"name", "torch.nn.Linear"}}}));
  EXPECT_EQ(a.extra, nlohmann::json::parse(R"({"inputs": {"seed": 3},
      "selectors": {"include": [{"has_ops": true}]}})"));
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

TEST(SuiteConfig, DefaultsFollowSpyre) {
  SuiteConfigResult r = parse(
      "test_suite_config:\n  files:\n    - path: a.py\n      tests:\n"
      "        - names: A::test_a\n");
  ASSERT_TRUE(r.ok()) << r.errors[0];
  EXPECT_EQ(r.config.labels, Lines{});  // Spyre: no labels, never selected by a label filter
  EXPECT_FALSE(r.config.files[0].unlisted_test_mode);
  ASSERT_EQ(r.config.files[0].rules.size(), 1u);  // Spyre allows a single name as a string
  EXPECT_EQ(r.config.files[0].rules[0].mode, TestMode::kMandatorySuccess);
  EXPECT_FALSE(r.config.global.supported_dtypes);
  EXPECT_FALSE(r.config.global.supported_ops);
}

TEST(SuiteConfig, EveryRealSpyreConfigValidates) {
  std::vector<std::string> paths;
  for (const char* tree : {"spyre-configs", "spyre-configs-current"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(fixture_path(tree)))
      if (e.path().extension() == ".yaml") paths.push_back(e.path().string());
  ASSERT_EQ(paths.size(), 9u + 94u);
  size_t rules = 0;
  for (const auto& p : paths) {
    SCOPED_TRACE(p);
    SuiteConfigResult r = load_suite_config(p);
    EXPECT_EQ(r.errors, Lines{});
    rules += r.config.rule_count();
  }
  EXPECT_GT(rules, 2500u);  // the current tree alone has 2,480
}

}  // namespace
}  // namespace ootci
