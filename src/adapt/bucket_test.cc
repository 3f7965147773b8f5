#include "adapt/bucket.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace ootci {
namespace {

constexpr const char* kDisabled =
    "Could not run 'aten::transpose.int' on the reference backend: switched off by "
    "OOTCI_REF_DISABLED_OPS";

// One recorded result: outcome, error class, message, the mode it ran in, flaky.
struct R {
  std::string outcome;
  std::string error_class;
  std::string message;
  std::string mode = "mandatory_success";
  bool flaky = false;
};

VariantEvidence variant(const std::string& name, const std::string& dtype,
                        const std::vector<R>& results, std::vector<std::string> ops = {},
                        const std::string& op = "") {
  VariantEvidence v;
  v.name = name;
  v.test_id = "test/test_x.py::TestXPRIVATEUSEONE::" + name;
  v.dtype = dtype;
  v.op = op;
  v.ops = std::move(ops);
  for (const auto& r : results) {
    TestResult t;
    t.test_id = v.test_id;
    t.outcome = *parse_outcome(r.outcome);
    t.error_class = r.error_class;
    t.message = r.message;
    t.mode = parse_test_mode(r.mode);
    t.flaky = r.flaky;
    t.dtype = dtype;
    t.op = op;
    v.results.push_back(t);
  }
  return v;
}

Capabilities reference_caps() {
  Capabilities c;
  c.supported_ops = {"aten::empty.memory_format", "aten::empty_strided",
                     "aten::_copy_from",          "aten::view",
                     "aten::as_strided",          "aten::resize_"};
  c.has_fallback = true;
  return c;
}

struct Case {
  const char* what;
  std::vector<R> results;  // newest first
  std::vector<std::string> ops;
  TestMode mode;
  Cause cause;
  std::string reason;
};

TEST(Bucket, OneVariantTable) {
  const std::vector<Case> cases = {
      {"passes every run",
       {{"passed", "", ""}, {"passed", "", ""}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kPassed,
       "mandatory_success: passed in every run"},
      {"a switched-off op",
       {{"failed", "NotImplementedError", kDisabled}},
       {"aten::empty.memory_format", "aten::transpose.int"},
       TestMode::kXfail,
       Cause::kMissingOp,
       std::string("xfail: aten::transpose.int is not implemented on the device "
                   "(NotImplementedError: ") +
           kDisabled + ")"},
      {"PyTorch's own missing-kernel error",
       {{"failed", "NotImplementedError",
         "Could not run 'aten::addmm.out' with arguments from the 'PrivateUse1' backend.\nmore"}},
       {},
       TestMode::kXfail,
       Cause::kMissingOp,
       "xfail: aten::addmm.out is not implemented on the device (NotImplementedError: Could not "
       "run 'aten::addmm.out' with arguments from the 'PrivateUse1' backend.)"},
      // PyTorch's OpenReg words it so.
      {"a Python backend's missing view kernel",
       {{"failed", "RuntimeError", "aten.view_as_real.default view op is not handled yet\nmore"}},
       {},
       TestMode::kXfail,
       Cause::kMissingOp,
       "xfail: aten::view_as_real is not implemented on the device (RuntimeError: "
       "aten.view_as_real.default view op is not handled yet)"},
      {"crashes every time",
       {{"error", "SIGSEGV", "the test process died"}, {"error", "SIGSEGV", ""}},
       {},
       TestMode::kSkip,
       Cause::kCrash,
       "skip: crashes the test process with SIGSEGV in every run"},
      {"crashes once, passes once",
       {{"passed", "", ""}, {"error", "SIGABRT", ""}},
       {},
       TestMode::kSkip,
       Cause::kCrash,
       "skip: crashes the test process with SIGABRT in 1 of 2 runs"},
      {"hangs",
       {{"error", "Timeout", "killed after 900 s"}},
       {},
       TestMode::kSkip,
       Cause::kHang,
       "skip: hangs (Timeout) in every run"},
      {"passes only on a rerun",
       {{"passed", "", "", "mandatory_success", true}, {"passed", "", ""}},
       {},
       TestMode::kXfail,
       Cause::kFlaky,
       "flaky: passed only on a rerun"},
      {"passes and fails across runs",
       {{"failed", "AssertionError", "Tensor-likes are not close!\n\nMismatched elements: 1"},
        {"passed", "", ""},
        {"failed", "AssertionError", "Tensor-likes are not close!"}},
       {},
       TestMode::kXfail,
       Cause::kFlaky,
       "flaky: passed in some runs and failed in others (AssertionError: Tensor-likes are not "
       "close!)"},
      {"passed once since failing: not enough to call it fixed",
       {{"passed", "", ""}, {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::kXfail,
       Cause::kFlaky,
       "flaky: passed in some runs and failed in others (RuntimeError: boom)"},
      {"passed in the newest runs after failing: fixed",
       {{"passed", "", ""}, {"xpassed", "", "", "xfail"}, {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kPassed,
       "mandatory_success: passed in every run since it last failed"},
      {"failing in the newest runs after passing: a regression is never hidden",
       {{"failed", "AssertionError", "Scalars are not equal!"},
        {"passed", "", ""},
        {"passed", "", ""}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kRegressed,
       "mandatory_success: passed in earlier runs, then failed in the newest: a regression "
       "candidate, never demoted (AssertionError: Scalars are not equal!)"},
      {"crashing in a run after passing only in discovery: discovery was wrong",
       {{"error", "SIGSEGV", ""}, {"passed", "", ""}},
       {},
       TestMode::kSkip,
       Cause::kCrash,
       "skip: crashes the test process with SIGSEGV in 1 of 2 runs"},
      {"crashing in the newest run after passing",
       {{"error", "SIGSEGV", ""}, {"passed", "", ""}, {"passed", "", ""}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kRegressed,
       "mandatory_success: passed in earlier runs, then crashed the test process with SIGSEGV in "
       "the newest: a regression candidate, never demoted (SIGSEGV)"},
      {"an unsupported dtype",
       {{"failed", "RuntimeError", "\"addmm_impl_cpu_\" not implemented for 'ComplexFloat'"}},
       {},
       TestMode::kXfail,
       Cause::kMissingDtype,
       "xfail: dtype complex64 is not supported on the device (RuntimeError: \"addmm_impl_cpu_\" "
       "not implemented for 'ComplexFloat')"},
      {"a failure inside kernels the device has: strict",
       {{"failed", "AssertionError", "Scalars are not equal!"},
        {"failed", "AssertionError", "Scalars are not equal!"}},
       {"aten::as_strided", "aten::view"},
       TestMode::kXfailStrict,
       Cause::kSupportedOps,
       "xfail_strict: fails in every run although every op it calls has a device kernel (2 ops), "
       "so a pass means the bug is fixed (AssertionError: Scalars are not equal!)"},
      {"a failure through the fallback: no cause to name",
       {{"failed", "AssertionError", "Scalars are not equal!"}},
       {"aten::view", "aten::add.Tensor"},
       TestMode::kXfail,
       Cause::kFailure,
       "xfail: fails in every run (AssertionError: Scalars are not equal!)"},
      {"an xfail later, failing since discovery: the real error is quoted",
       {{"xfailed", "", "ootci plan: xfail (c.yaml:3:15)", "xfail"},
        {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::kXfail,
       Cause::kFailure,
       "xfail: fails in every run (RuntimeError: boom)"},
      {"a strict xfail that passed counts as a pass",
       {{"failed", "XPASS(strict)", "[XPASS(strict)] ootci plan", "xfail_strict"},
        {"xpassed", "", "", "xfail"}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kPassed,
       "mandatory_success: passed in every run"},
      {"upstream's expected failure is green",
       {{"xfailed", "", "reason: "}},
       {},
       TestMode::kMandatorySuccess,
       Cause::kPassed,
       "mandatory_success: upstream expects it to fail on this device (xfailed in every run)"},
      {"upstream skips it",
       {{"skipped", "", "Skipped: Only runs on cuda"},
        {"skipped", "", "Skipped: Only runs on cuda"}},
       {},
       TestMode::kSkip,
       Cause::kNeverRan,
       "skip: upstream skips it on this device (Skipped: Only runs on cuda)"},
      {"an op named in an error that the device does have is not missing",
       {{"failed", "NotImplementedError", "aten::view is not implemented for this layout"}},
       {},
       TestMode::kXfail,
       Cause::kFailure,
       "xfail: fails in every run (NotImplementedError: aten::view is not implemented for this "
       "layout)"},
  };
  for (const Case& c : cases) {
    BaseEvidence base{"TestX::test_a", {variant("test_a_privateuseone", "", c.results, c.ops)}};
    std::vector<Bucket> b = bucket_variants(base, reference_caps());
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].mode, c.mode) << c.what;
    EXPECT_EQ(b[0].cause, c.cause) << c.what;
    EXPECT_EQ(b[0].reason(), c.reason) << c.what;
  }
}

TEST(Bucket, WithoutAFallbackRecordedOpsWithoutKernelsAreMissing) {
  Capabilities caps = reference_caps();
  caps.has_fallback = false;
  BaseEvidence base{"TestX::test_a",
                    {variant("test_a_privateuseone", "", {{"failed", "RuntimeError", "odd"}},
                             {"aten::view", "aten::zeros", "aten::add.Tensor"})}};
  std::vector<Bucket> b = bucket_variants(base, caps);
  EXPECT_EQ(b[0].cause, Cause::kMissingOp);
  EXPECT_EQ(b[0].op, "aten::zeros");
  EXPECT_EQ(b[0].reason(),
            "xfail: aten::zeros, aten::add.Tensor are not implemented on the device "
            "(RuntimeError: odd)");
}

// A pass the input probe undid (its inputs shifted, it failed) is a pass for the values it draws
// only: never mandatory. A probe that held, or none, leaves a pass mandatory; a failure keeps
// its own bucket.
TEST(Bucket, APassThatFailedWithItsInputsShiftedIsNotMandatory) {
  VariantEvidence shifted = variant("test_a_privateuseone", "", {{"passed", "", ""}}, {});
  shifted.input_probe = "failed with its inputs shifted by 1.522: AssertionError";
  VariantEvidence held = variant("test_b_privateuseone", "", {{"passed", "", ""}}, {});
  held.input_probe = "held: 8 shifts of its inputs";
  VariantEvidence failing =
      variant("test_c_privateuseone", "", {{"failed", "RuntimeError", "odd"}}, {});
  failing.input_probe = shifted.input_probe;  // not probed in practice; a failure stays one
  BaseEvidence base{"TestX::test_a", {shifted, held, failing}};
  std::vector<Bucket> b = bucket_variants(base, reference_caps());
  EXPECT_EQ(b[0].mode, TestMode::kXfail);
  EXPECT_EQ(b[0].cause, Cause::kInputDependent);
  EXPECT_EQ(b[0].reason(),
            "xfail: passed in every run, but failed with its inputs shifted by 1.522: "
            "AssertionError: it passes only for the values it draws (discovery's input probe)");
  EXPECT_EQ(b[1].mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(b[2].cause, Cause::kFailure);
}

TEST(Bucket, GlobalCapabilitiesLeaveVariantsUnadmitted) {
  Capabilities caps = reference_caps();
  caps.supported_dtypes = std::set<std::string>{"float32"};
  caps.declared_ops = std::set<std::string>{"add", "linalg_vector_norm"};
  BaseEvidence base{
      "TestX::test_a",
      {variant("test_a_add_privateuseone_float64", "float64", {{"passed", "", ""}}, {}, "add"),
       variant("test_a_mul_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "mul"),
       variant("test_a_linalg_vector_norm_privateuseone_float32", "float32", {{"passed", "", ""}},
               {}, "linalg.vector_norm")}};
  std::vector<Bucket> b = bucket_variants(base, caps);
  EXPECT_EQ(b[0].reason(), "skip: dtype float64 is not in global.supported_dtypes");
  EXPECT_TRUE(b[0].neutral());
  EXPECT_EQ(b[1].reason(), "skip: op mul is not in global.supported_ops");
  EXPECT_EQ(b[2].mode, TestMode::kMandatorySuccess);  // the formatted name counts
}

TEST(Bucket, AFailureOfOneDtypeWhileTheOthersPassNamesTheDtype) {
  BaseEvidence base{"TestX::test_a",
                    {variant("test_a_privateuseone_complex64", "complex64",
                             {{"failed", "AssertionError", "Tensor-likes are not close!"}}),
                     variant("test_a_privateuseone_float32", "float32", {{"passed", "", ""}}),
                     variant("test_a_privateuseone_int64", "int64", {{"passed", "", ""}})}};
  std::vector<Bucket> b = bucket_variants(base, reference_caps());
  EXPECT_EQ(b[0].cause, Cause::kDtypeSpecific);
  EXPECT_EQ(b[0].reason(),
            "xfail: fails only for dtype complex64; the other dtypes pass (AssertionError: "
            "Tensor-likes are not close!)");
  // Within one op only: here every dtype of op `b` fails, so it is not about the dtype.
  BaseEvidence ops{
      "TestX::test_o",
      {variant("test_o_a_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "a"),
       variant("test_o_b_privateuseone_float32", "float32", {{"failed", "RuntimeError", "x"}}, {},
               "b"),
       variant("test_o_b_privateuseone_int64", "int64", {{"failed", "RuntimeError", "x"}}, {},
               "b")}};
  b = bucket_variants(ops, reference_caps());
  EXPECT_EQ(b[1].cause, Cause::kFailure);
  EXPECT_EQ(b[2].cause, Cause::kFailure);
}

// Every variant that ran runs in a mode safe for its bucket (accepts), and every name is a base.
void expect_safe(const std::vector<const BaseEvidence*>& bases,
                 const std::vector<std::vector<Bucket>>& buckets,
                 const std::vector<NameDecision>& decisions,
                 const std::optional<std::set<std::string>>& global = std::nullopt) {
  std::set<std::string> names;
  for (const auto* b : bases) names.insert(b->base);
  for (const auto& d : decisions) EXPECT_TRUE(names.count(d.name)) << d.name;
  DecisionIndex index(decisions, global);
  for (size_t b = 0; b < bases.size(); ++b)
    for (size_t i = 0; i < bases[b]->variants.size(); ++i) {
      if (buckets[b][i].neutral()) continue;
      std::optional<TestMode> mode = index.mode(bases[b]->base, bases[b]->variants[i]);
      ASSERT_TRUE(mode) << bases[b]->variants[i].name;
      EXPECT_TRUE(accepts(buckets[b][i], *mode))
          << bases[b]->variants[i].name << ": " << to_string(buckets[b][i].mode) << " run as "
          << to_string(*mode);
    }
}

// The mode each variant runs in, by variant name.
std::map<std::string, TestMode> modes(const BaseEvidence& base,
                                      const std::vector<NameDecision>& decisions,
                                      const std::optional<std::set<std::string>>& global = {}) {
  DecisionIndex index(decisions, global);
  std::map<std::string, TestMode> out;
  for (const auto& v : base.variants) out[v.name] = index.mode(base.base, v).value();
  return out;
}

const NameDecision* unrestricted(const std::vector<NameDecision>& d, const std::string& name) {
  for (const auto& x : d)
    if (x.name == name && !x.restricted()) return &x;
  return nullptr;
}

const NameDecision* restricted(const std::vector<NameDecision>& d, const std::string& name) {
  for (const auto& x : d)
    if (x.name == name && x.restricted()) return &x;
  return nullptr;
}

TEST(Represent, AUniformTestIsOneName) {
  BaseEvidence base{"TestX::test_a",
                    {variant("test_a_privateuseone_float32", "float32",
                             {{"failed", "NotImplementedError", kDisabled}}),
                     variant("test_a_privateuseone_int64", "int64",
                             {{"failed", "NotImplementedError", kDisabled}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "TestX::test_a");
  EXPECT_FALSE(d[0].restricted());
  EXPECT_EQ(d[0].mode, TestMode::kXfail);
  EXPECT_EQ(d[0].reason, std::string("xfail: aten::transpose.int is not implemented on the "
                                     "device (NotImplementedError: ") +
                             kDisabled + ")");
}

TEST(Represent, ADtypeThatNeedsAnotherModeGetsAnEntryRestrictedToIt) {
  BaseEvidence base{
      "TestX::test_a",
      {variant("test_a_privateuseone_complex128", "complex128",
               {{"failed", "RuntimeError", "\"abs\" not implemented for 'ComplexDouble'"}}),
       variant("test_a_privateuseone_complex64", "complex64", {{"error", "SIGSEGV", ""}}),
       variant("test_a_privateuseone_float32", "float32", {{"passed", "", ""}}),
       variant("test_a_privateuseone_float64", "float64", {{"passed", "", ""}}),
       variant("test_a_privateuseone_int8", "int8", {{"skipped", "", "Skipped: no int8"}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 2u);
  const NameDecision* head = unrestricted(d, "TestX::test_a");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(head->dtypes_exclude, std::vector<std::string>{"complex64"});
  EXPECT_TRUE(head->ops_exclude.empty());
  EXPECT_EQ(head->reason,
            "mandatory_success: passed in every run; excluded dtype complex64: crashes the test "
            "process with SIGSEGV in every run");
  const NameDecision* complex = restricted(d, "TestX::test_a");
  ASSERT_TRUE(complex);
  EXPECT_EQ(complex->dtypes_include, std::vector<std::string>{"complex128"});
  EXPECT_EQ(complex->mode, TestMode::kXfail);
  EXPECT_EQ(complex->reason,
            "xfail: for complex128: dtype complex128 is not supported on the device "
            "(RuntimeError: \"abs\" not implemented for 'ComplexDouble')");

  // Applied as Spyre applies them, the decisions reproduce every bucket exactly.
  std::map<std::string, TestMode> m = modes(base, d);
  EXPECT_EQ(m["test_a_privateuseone_complex128"], TestMode::kXfail);
  EXPECT_EQ(m["test_a_privateuseone_complex64"], TestMode::kSkip);
  EXPECT_EQ(m["test_a_privateuseone_float32"], TestMode::kMandatorySuccess);
  EXPECT_EQ(m["test_a_privateuseone_float64"], TestMode::kMandatorySuccess);
  expect_safe({&base}, {buckets}, d);
}

TEST(Represent, WithGlobalDtypesAVariantWithoutADtypeKeepsTheDtypeInItsTestsEntry) {
  // Spyre gives an entry without dtypes.include the global dtypes, so a variant with no dtype in
  // its name would fall to the first entry: a restricted one, if there were one.
  BaseEvidence base{"TestX::test_g",
                    {variant("test_g_privateuseone", "", {{"passed", "", ""}}),
                     variant("test_g_privateuseone_float32", "float32", {{"passed", "", ""}}),
                     variant("test_g_privateuseone_float16", "float16",
                             {{"failed", "AssertionError", "Tensors are not close!"}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::set<std::string> global = {"float16", "float32"};
  std::vector<NameDecision> d = represent_base(base, buckets, global);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kXfail);
  EXPECT_NE(d[0].reason.find("; all run as xfail: a config names no single variant"),
            std::string::npos)
      << d[0].reason;
  expect_safe({&base}, {buckets}, d, global);

  // Without the dtype-less variant, the restricted entry decides float16 exactly.
  base.variants.erase(base.variants.begin());
  buckets = bucket_variants(base, reference_caps());
  d = represent_base(base, buckets, global);
  ASSERT_EQ(d.size(), 2u);
  std::map<std::string, TestMode> m = modes(base, d, global);
  EXPECT_EQ(m["test_g_privateuseone_float32"], TestMode::kMandatorySuccess);
  EXPECT_EQ(m["test_g_privateuseone_float16"], TestMode::kXfail);
  expect_safe({&base}, {buckets}, d, global);
  // A dtype outside the global ones is never included: that would create its variants.
  d = represent_base(base, buckets, std::set<std::string>{"float32"});
  for (const auto& x : d) EXPECT_NE(x.dtypes_include, std::vector<std::string>{"float16"});
  expect_safe({&base}, {buckets}, d, std::set<std::string>{"float32"});
}

TEST(Represent, OpsWhoseVariantsAllCrashOrFailAreExcludedInBothSpellings) {
  BaseEvidence base{
      "TestX::test_o",
      {variant("test_o_add_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_add_privateuseone_int64", "int64", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_linalg_det_privateuseone_float32", "float32", {{"error", "SIGSEGV", ""}}, {},
               "linalg.det"),
       variant("test_o_linalg_det_privateuseone_int64", "int64", {{"error", "SIGSEGV", ""}}, {},
               "linalg.det"),
       variant("test_o_acos_privateuseone_float32", "float32",
               {{"failed", "NotImplementedError", "Could not run 'aten::acos.out' on it"}}, {},
               "acos"),
       variant("test_o_acos_privateuseone_int64", "int64",
               {{"failed", "NotImplementedError", "Could not run 'aten::acos.out' on it"}}, {},
               "acos"),
       variant("test_o_mul_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "mul"),
       variant("test_o_mul_privateuseone_int64", "int64", {{"passed", "", ""}}, {}, "mul")}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kMandatorySuccess);
  // ootci matches the OpInfo name, Spyre the formatted one.
  EXPECT_EQ(d[0].ops_exclude, (std::vector<std::string>{"acos", "linalg.det", "linalg_det"}));
  EXPECT_TRUE(d[0].dtypes_exclude.empty());
  EXPECT_NE(d[0].reason.find("; excluded ops acos, linalg.det: "), std::string::npos)
      << d[0].reason;
  EXPECT_NE(d[0].reason.find("aten::acos.out is not implemented on the device"),
            std::string::npos)
      << d[0].reason;  // rebucket's admission finds the op here
  std::map<std::string, TestMode> m = modes(base, d);
  EXPECT_EQ(m["test_o_acos_privateuseone_float32"], TestMode::kSkip);
  EXPECT_EQ(m["test_o_linalg_det_privateuseone_int64"], TestMode::kSkip);
  EXPECT_EQ(m["test_o_mul_privateuseone_int64"], TestMode::kMandatorySuccess);
  expect_safe({&base}, {buckets}, d);
}

TEST(Represent, AnOpExclusionThatWouldAlsoCatchAnotherOpIsNotMade) {
  // Spyre's ops.exclude `sum` also leaves out `sum_to_size` (a prefix before '_').
  BaseEvidence base{
      "TestX::test_p",
      {variant("test_p_sum_privateuseone_float32", "float32", {{"error", "SIGSEGV", ""}}, {},
               "sum"),
       variant("test_p_sum_to_size_privateuseone_float32", "float32", {{"passed", "", ""}}, {},
               "sum_to_size"),
       variant("test_p_mul_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "mul")}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].ops_exclude.empty());
  EXPECT_EQ(d[0].mode, TestMode::kSkip);  // the crash cannot be left out alone
  expect_safe({&base}, {buckets}, d);
}

TEST(Represent, ACrashLeftInATestTakesTheDtypeOrOpThatCostsLess) {
  BaseEvidence base{
      "TestX::test_o",
      {variant("test_o_add_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_add_privateuseone_int64", "int64", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_mul_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "mul"),
       variant("test_o_mul_privateuseone_float64", "float64", {{"passed", "", ""}}, {}, "mul"),
       variant("test_o_mul_privateuseone_int64", "int64", {{"error", "Timeout", ""}}, {}, "mul")}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 1u);
  // int64 leaves out one passing variant (add's), mul two.
  EXPECT_EQ(d[0].dtypes_exclude, std::vector<std::string>{"int64"});
  EXPECT_TRUE(d[0].ops_exclude.empty());
  EXPECT_EQ(d[0].mode, TestMode::kMandatorySuccess);
  EXPECT_NE(d[0].reason.find("(left out rather than run in this entry's mode"), std::string::npos)
      << d[0].reason;
  expect_safe({&base}, {buckets}, d);
}

TEST(Represent, AMultiDtypeVariantIsNeverRoutedByADtypeEdit) {
  BaseEvidence base{"TestX::test_m",
                    {variant("test_m_privateuseone_int64", "int64", {{"error", "SIGSEGV", ""}}),
                     variant("test_m_privateuseone_float32_int64", "float32,int64",
                             {{"failed", "AssertionError", "no"}}),
                     variant("test_m_privateuseone_float32", "float32", {{"passed", "", ""}}),
                     variant("test_m_privateuseone_float64", "float64", {{"passed", "", ""}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  // ootci reads float32 and int64 in the multi-dtype variant, Spyre float32 from its name: no
  // restricted entry for either, so it stays in the test's entry, which becomes xfail; float64,
  // which it does not touch, keeps mandatory_success in an entry of its own.
  ASSERT_EQ(d.size(), 2u);
  const NameDecision* head = unrestricted(d, "TestX::test_m");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->dtypes_exclude, std::vector<std::string>{"int64"});
  EXPECT_EQ(head->mode, TestMode::kXfail);
  ASSERT_TRUE(restricted(d, "TestX::test_m"));
  EXPECT_EQ(restricted(d, "TestX::test_m")->dtypes_include, std::vector<std::string>{"float64"});
  EXPECT_EQ(restricted(d, "TestX::test_m")->mode, TestMode::kMandatorySuccess);
  expect_safe({&base}, {buckets}, d);
}

TEST(Represent, AMostlyCrashingTestExcludesItsCrashingDtypes) {
  BaseEvidence base{"TestX::test_c",
                    {variant("test_c_privateuseone_float32", "float32", {{"error", "SIGSEGV", ""}}),
                     variant("test_c_privateuseone_float64", "float64", {{"error", "SIGSEGV", ""}}),
                     variant("test_c_privateuseone_int64", "int64", {{"passed", "", ""}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(d[0].dtypes_exclude, (std::vector<std::string>{"float32", "float64"}));
  std::map<std::string, TestMode> m = modes(base, d);
  EXPECT_EQ(m["test_c_privateuseone_int64"], TestMode::kMandatorySuccess);
  EXPECT_EQ(m["test_c_privateuseone_float32"], TestMode::kSkip);
}

TEST(Represent, OneClassPassingAndAnotherFailingTheSameMethodShareTheWeakerMode) {
  // Spyre drops the class: TestA::test_m and TestB::test_m are one method to it.
  BaseEvidence a{"TestA::test_m",
                 {variant("test_m_privateuseone_float32", "float32", {{"passed", "", ""}}),
                  variant("test_m_privateuseone_float64", "float64", {{"passed", "", ""}})}};
  BaseEvidence b{"TestB::test_m",
                 {variant("test_m_privateuseone_float32", "float32",
                          {{"failed", "AssertionError", "Tensors are not close!"}}),
                  variant("test_m_privateuseone_float64", "float64", {{"passed", "", ""}})}};
  for (auto* base : {&a, &b})
    for (auto& v : base->variants)
      v.test_id = "test/test_x.py::" + split_base(base->base).first + "PRIVATEUSEONE::" + v.name;
  std::vector<std::vector<Bucket>> buckets = {bucket_variants(a, reference_caps()),
                                              bucket_variants(b, reference_caps())};
  std::vector<NameDecision> d = represent_method({&a, &b}, {&buckets[0], &buckets[1]}, {});
  // float32 runs as xfail in both classes (it fails in one), float64 stays mandatory in both. One
  // name per entry, the first class's: Spyre's checker reports a method listed twice.
  ASSERT_EQ(d.size(), 2u);
  ASSERT_TRUE(restricted(d, "TestA::test_m"));
  EXPECT_EQ(restricted(d, "TestA::test_m")->mode, TestMode::kXfail);
  EXPECT_EQ(restricted(d, "TestA::test_m")->dtypes_include, std::vector<std::string>{"float32"});
  ASSERT_TRUE(unrestricted(d, "TestA::test_m"));
  EXPECT_EQ(unrestricted(d, "TestA::test_m")->mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(restricted(d, "TestA::test_m")->reason,
            "xfail: for float32: mandatory_success: passed in every run (1 variant); fails only "
            "for dtype float32; the other dtypes pass (1 variant); all run as xfail: a config "
            "names no single variant, and no dtype or op edit separates these; one entry for "
            "TestA::test_m and TestB::test_m: Spyre matches the method name only");
  expect_safe({&a, &b}, buckets, d);
  EXPECT_EQ(modes(a, d)["test_m_privateuseone_float32"], TestMode::kXfail);
  EXPECT_EQ(modes(b, d)["test_m_privateuseone_float64"], TestMode::kMandatorySuccess);

  // No dtype to tell them apart: the method is xfail in both; a crash in one skips both.
  BaseEvidence c{"TestA::test_n", {variant("test_n_privateuseone", "", {{"passed", "", ""}})}};
  BaseEvidence e{"TestB::test_n",
                 {variant("test_n_privateuseone", "", {{"failed", "AssertionError", "no"}})}};
  std::vector<std::vector<Bucket>> nb = {bucket_variants(c, reference_caps()),
                                         bucket_variants(e, reference_caps())};
  d = represent_method({&c, &e}, {&nb[0], &nb[1]}, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "TestA::test_n");
  EXPECT_EQ(d[0].mode, TestMode::kXfail);
  expect_safe({&c, &e}, nb, d);
  e.variants[0] = variant("test_n_privateuseone", "", {{"error", "SIGSEGV", ""}});
  nb[1] = bucket_variants(e, reference_caps());
  d = represent_method({&c, &e}, {&nb[0], &nb[1]}, {});
  EXPECT_EQ(d[0].mode, TestMode::kSkip);
  expect_safe({&c, &e}, nb, d);
}

TEST(Represent, ARegressionCandidateIsNeverDemotedByAMerge) {
  BaseEvidence a{
      "TestA::test_r",
      {variant("test_r_privateuseone", "",
               {{"failed", "RuntimeError", "boom"}, {"passed", "", ""}, {"passed", "", ""}})}};
  BaseEvidence b{"TestB::test_r",
                 {variant("test_r_privateuseone", "", {{"failed", "AssertionError", "no"}})}};
  std::vector<std::vector<Bucket>> buckets = {bucket_variants(a, reference_caps()),
                                              bucket_variants(b, reference_caps())};
  ASSERT_EQ(buckets[0][0].cause, Cause::kRegressed);
  std::vector<NameDecision> d = represent_method({&a, &b}, {&buckets[0], &buckets[1]}, {});
  EXPECT_EQ(d[0].mode, TestMode::kMandatorySuccess);
  EXPECT_NE(d[0].reason.find("all run as mandatory_success: a regression candidate is never "
                             "demoted"),
            std::string::npos)
      << d[0].reason;
}

TEST(Represent, RestrictedEntriesInOpsTestsAreXfailOnly) {
  // An include adds its dtype to every op of an @ops test (ootci), also to ops never seen with
  // it: only xfail is safe for variants no run has seen.
  auto ops_test = [](const std::string& f16_outcome) {
    return BaseEvidence{
        "TestX::test_u",
        {variant("test_u_abs_privateuseone_float16", "float16",
                 {{f16_outcome, "AssertionError", "x"}}, {}, "abs"),
         variant("test_u_abs_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "abs"),
         variant("test_u_neg_privateuseone_float16", "float16",
                 {{f16_outcome, "AssertionError", "x"}}, {}, "neg"),
         variant("test_u_neg_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "neg"),
         variant("test_u_sin_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "sin")}};
  };
  BaseEvidence failing = ops_test("failed");
  std::vector<Bucket> buckets = bucket_variants(failing, reference_caps());
  std::vector<NameDecision> d = represent_base(failing, buckets);
  ASSERT_TRUE(restricted(d, "TestX::test_u"));
  EXPECT_EQ(restricted(d, "TestX::test_u")->mode, TestMode::kXfail);
  expect_safe({&failing}, {buckets}, d);

  // float16 passes where everything else fails: no mandatory_success entry for it.
  BaseEvidence passing = ops_test("passed");
  for (auto& v : passing.variants)
    if (v.dtype == "float32")
      v = variant(v.name, "float32", {{"failed", "AssertionError", "y"}}, {}, v.op);
  buckets = bucket_variants(passing, reference_caps());
  d = represent_base(passing, buckets);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kXfail);
  expect_safe({&passing}, {buckets}, d);
}

TEST(Represent, SeveralMissingOpsAreAllNamedInOneReason) {
  BaseEvidence base{
      "TestX::test_u",
      {variant("test_u_acos_privateuseone_float32", "float32",
               {{"failed", "NotImplementedError", "Could not run 'aten::acos.out' on it"}}, {},
               "acos"),
       variant("test_u_asin_privateuseone_float32", "float32",
               {{"failed", "NotImplementedError", "Could not run 'aten::asin.out' on it"}}, {},
               "asin"),
       variant("test_u_atan_privateuseone_float32", "float32",
               {{"failed", "AssertionError", "Scalars are not equal!"}}, {}, "atan")}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kXfail);
  EXPECT_EQ(d[0].reason,
            "xfail: aten::acos.out, aten::asin.out are not implemented on the device (2 "
            "variants); fails in every run (1 variant) (NotImplementedError: Could not run "
            "'aten::acos.out' on it)");
}

TEST(Represent, ATestNoRunRanIsSkipped) {
  BaseEvidence base{"TestX::test_cuda_only",
                    {variant("test_cuda_only_privateuseone", "",
                             {{"skipped", "", "Skipped: Only runs on cuda"}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].mode, TestMode::kSkip);
  EXPECT_EQ(d[0].reason, "skip: upstream skips it on this device (Skipped: Only runs on cuda)");
}

TEST(Represent, AFileIsRepresentedByMethodNameAndNamesNoVariant) {
  FileEvidence f;
  f.relpath = "test/test_x.py";
  f.bases = {
      {"TestA::test_m",
       {variant("test_m_privateuseone_float32", "float32", {{"passed", "", ""}}),
        variant("test_m_privateuseone_complex64", "complex64",
                {{"failed", "RuntimeError", "not implemented for 'ComplexFloat'"}})}},
      {"TestA::test_z", {variant("test_z_privateuseone", "", {{"passed", "", ""}})}},
      {"TestB::test_m",
       {variant("test_m_privateuseone_float32", "float32", {{"passed", "", ""}}),
        variant("test_m_privateuseone_complex64", "complex64", {{"error", "SIGSEGV", ""}})}}};
  f.bases[2].variants[0].test_id =
      "test/test_x.py::TestBPRIVATEUSEONE::test_m_privateuseone_float32";
  f.bases[2].variants[1].test_id =
      "test/test_x.py::TestBPRIVATEUSEONE::test_m_privateuseone_complex64";
  std::vector<std::vector<Bucket>> buckets;
  for (const auto& b : f.bases) buckets.push_back(bucket_variants(b, reference_caps()));
  std::vector<NameDecision> d = represent_file(f, buckets, std::nullopt);
  std::set<std::string> names;
  for (const auto& x : d) names.insert(x.name);
  EXPECT_EQ(names, (std::set<std::string>{"TestA::test_m", "TestA::test_z"}));
  // complex64 crashes in TestB and fails in TestA: one method, so it is excluded for both.
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(unrestricted(d, "TestA::test_m")->dtypes_exclude,
            std::vector<std::string>{"complex64"});
  expect_safe({&f.bases[0], &f.bases[1], &f.bases[2]}, buckets, d);
}

TEST(Decisions, SpyreReadsTheDtypeFromTheVariantName) {
  EXPECT_EQ(spyre_dtype("test_a_privateuseone_float32"), "float32");
  EXPECT_EQ(spyre_dtype("test_a_privateuseone_bfloat16"), "bfloat16");
  EXPECT_EQ(spyre_dtype("test_a_privateuseone_complex128"), "complex128");
  EXPECT_EQ(spyre_dtype("test_a_privateuseone_uint8"), "uint8");
  EXPECT_EQ(spyre_dtype("test_pool_half_privateuseone"), "float16");
  EXPECT_EQ(spyre_dtype("test_bool_indices_privateuseone"), "bool");  // not a dtype to ootci
  EXPECT_EQ(spyre_dtype("test_a_privateuseone_float32_int64"), "float32");
  EXPECT_EQ(spyre_dtype("test_a_privateuseone"), "");
  VariantEvidence v;
  v.name = "test_a_privateuseone_float32";
  v.dtype = "float32";
  EXPECT_EQ(unambiguous_dtype(v), "float32");
  v.name = "test_bool_indices_privateuseone";
  v.dtype = "";
  EXPECT_EQ(unambiguous_dtype(v), "");
  v.name = "test_a_privateuseone_float32_int64";
  v.dtype = "float32,int64";
  EXPECT_EQ(unambiguous_dtype(v), "");
  EXPECT_EQ(formatted_op("linalg.vector_norm"), "linalg_vector_norm");
  EXPECT_TRUE(op_exclusion_covers("max", "max"));
  EXPECT_TRUE(op_exclusion_covers("linalg_det", "linalg.det"));
  EXPECT_TRUE(op_exclusion_covers("sum", "sum_to_size"));
  EXPECT_FALSE(op_exclusion_covers("add", "addmm"));
}

TEST(Decisions, TheIndexPicksEntriesAsSpyreDoes) {
  auto entry = [](const std::string& name, TestMode mode, std::vector<std::string> include) {
    NameDecision d;
    d.name = name;
    d.mode = mode;
    d.dtypes_include = std::move(include);
    return d;
  };
  VariantEvidence f16, f32, plain;
  f16.name = "test_a_privateuseone_float16";
  f16.dtype = "float16";
  f32.name = "test_a_privateuseone_float32";
  f32.dtype = "float32";
  plain.name = "test_a_privateuseone";
  // Given unrestricted first, the index still puts the restricted entry first, as it is written.
  std::vector<NameDecision> d = {entry("TestX::test_a", TestMode::kMandatorySuccess, {}),
                                 entry("TestX::test_a", TestMode::kXfail, {"float16"})};
  for (const auto& global : {std::optional<std::set<std::string>>{},
                             std::optional<std::set<std::string>>{{"float16", "float32"}}}) {
    DecisionIndex index(d, global);
    EXPECT_EQ(index.mode("TestX::test_a", f16), TestMode::kXfail);
    EXPECT_EQ(index.mode("TestX::test_a", f32), TestMode::kMandatorySuccess);
    // The class is dropped: another class's test_a is decided by the same entries.
    EXPECT_EQ(index.mode("TestY::test_a", f16), TestMode::kXfail);
    EXPECT_FALSE(index.mode("TestX::test_b", f16));
  }
  // With global dtypes, a variant without a dtype gets the first entry written: the restricted
  // one (which is why propose writes none then).
  DecisionIndex global(d, std::set<std::string>{"float16", "float32"});
  EXPECT_EQ(global.mode("TestX::test_a", plain), TestMode::kXfail);
  DecisionIndex none(d);
  EXPECT_EQ(none.mode("TestX::test_a", plain), TestMode::kMandatorySuccess);
  // A dtype outside the global ones is not created, unless an entry includes it.
  DecisionIndex narrow(d, std::set<std::string>{"float16"});
  EXPECT_EQ(narrow.mode("TestX::test_a", f32), TestMode::kSkip);
}

TEST(BucketHelpers, NamesAndQuotes) {
  EXPECT_EQ(aten_ops_in("aten::add.Tensor then aten::add.Tensor and aten::mul"),
            (std::vector<std::string>{"aten::add.Tensor", "aten::mul"}));
  // Python's OpOverload spelling, its default overload as the schema names it.
  EXPECT_EQ(aten_ops_in("aten.view.default, aten.add.Tensor, aten::view and aten._reshape_alias."
                        "default"),
            (std::vector<std::string>{"aten::view", "aten::add.Tensor", "aten::_reshape_alias"}));
  EXPECT_EQ(quote_error("RuntimeError", "RuntimeError: boom\nstack"), "RuntimeError: boom");
  EXPECT_EQ(quote_error("SIGSEGV", ""), "SIGSEGV");
  EXPECT_EQ(quote_error("", std::string(300, 'x')), std::string(160, 'x') + "...");
}

}  // namespace
}  // namespace ootci

namespace ootci {
namespace {

// Tolerance proposals: a float32 computed through bfloat16 fails only by torch's numeric
// mismatch, within 4x bfloat16's default rtol (0.016).
constexpr const char* kNotClose =
    "Tensor-likes are not close!\n\nMismatched elements: 30 / 30 (100.0%)\n"
    "Greatest absolute difference: 0.0066814422607421875 at index (2, 1) (up to 1e-05 allowed)\n"
    "Greatest relative difference: 0.003027697668790597 at index (7, 2) (up to 1.3e-06 allowed)";
// One mantissa bit left: 20% off, beyond 4 x 0.016.
constexpr const char* kFarOff =
    "Scalars are not close!\n\nAbsolute difference: 0.5 (up to 1e-05 allowed)\n"
    "Relative difference: 0.199 (up to 1.3e-06 allowed)";

TEST(Tolerance, WithinTheFactorAVariantRunsWithAPrecisionInItsDtypeEntry) {
  BaseEvidence base{
      "TestX::test_m",
      {variant("test_m_privateuseone_float32", "float32",
               {{"failed", "AssertionError", kNotClose}, {"failed", "AssertionError", kNotClose}}),
       variant("test_m_privateuseone_float64", "float64", {{"passed", "", ""}, {"passed", "", ""}}),
       variant("test_m_privateuseone_int64", "int64", {{"passed", "", ""}, {"passed", "", ""}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  EXPECT_EQ(buckets[0].cause, Cause::kTolerance);
  EXPECT_EQ(buckets[0].mode, TestMode::kMandatorySuccess);
  ASSERT_TRUE(buckets[0].precision);
  EXPECT_DOUBLE_EQ(buckets[0].precision->rtol, 0.0038);
  EXPECT_DOUBLE_EQ(buckets[0].precision->atol, 1e-05);

  // The narrowest level a config has for it: the test's float32 (edits.dtypes.include with a
  // precision); the other dtypes keep the test's plain entry and torch's own tolerances.
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_EQ(d.size(), 2u);
  const NameDecision* f32 = restricted(d, "TestX::test_m");
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(f32->dtypes_include, std::vector<std::string>{"float32"});
  ASSERT_EQ(f32->dtype_precision.count("float32"), 1u);
  EXPECT_EQ(f32->dtype_precision.at("float32"), (Precision{1e-05, 0.0038}));
  EXPECT_EQ(f32->reason,
            "mandatory_success: for float32: fails only by a numeric mismatch in every run: max "
            "abs error 0.0066814422607421875, max rel error 0.003027697668790597 (allowed atol "
            "1e-05, rtol 1.3e-06); within 4x float32's reference precision (bfloat16's default "
            "rtol 0.016, atol 1e-05), so it runs with atol 1e-05, rtol 0.0038 (AssertionError: "
            "Tensor-likes are not close!)");
  const NameDecision* head = unrestricted(d, "TestX::test_m");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->mode, TestMode::kMandatorySuccess);
  EXPECT_TRUE(head->dtype_precision.empty());
  std::map<std::string, TestMode> m = modes(base, d);
  EXPECT_EQ(m["test_m_privateuseone_float32"], TestMode::kMandatorySuccess);
  EXPECT_EQ(DecisionIndex(d).governing(base.base, base.variants[0]), f32);
  EXPECT_EQ(DecisionIndex(d).governing(base.base, base.variants[1]), head);
}

TEST(Tolerance, ATestWhoseOnlyDtypeNeedsAToleranceStillHasAPlainEntry) {
  BaseEvidence base{"TestX::test_m",
                    {variant("test_m_privateuseone_float32", "float32",
                             {{"failed", "AssertionError", kNotClose}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 2u);
  ASSERT_TRUE(restricted(d, "TestX::test_m"));
  EXPECT_EQ(restricted(d, "TestX::test_m")->dtype_precision.count("float32"), 1u);
  ASSERT_TRUE(unrestricted(d, "TestX::test_m"));
  EXPECT_EQ(unrestricted(d, "TestX::test_m")->reason,
            "mandatory_success: every variant that ran is decided by a dtype entry above; this "
            "entry decides those no run ran");
}

TEST(Tolerance, BeyondTheFactorItStaysXfailWithTheNumbers) {
  BaseEvidence base{
      "TestX::test_m",
      {variant("test_m_privateuseone_float32", "float32", {{"failed", "AssertionError", kFarOff}}),
       variant("test_m_privateuseone_float64", "float64", {{"passed", "", ""}})}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  EXPECT_EQ(buckets[0].cause, Cause::kNumeric);
  EXPECT_EQ(buckets[0].mode, TestMode::kXfail);
  EXPECT_FALSE(buckets[0].precision);
  EXPECT_EQ(buckets[0].reason(),
            "xfail: fails only by a numeric mismatch in every run: max abs error 0.5, max rel "
            "error 0.199 (allowed atol 1e-05, rtol 1.3e-06); beyond 4x float32's reference "
            "precision (bfloat16's default rtol 0.016, atol 1e-05), that is rtol 0.064: no "
            "tolerance proposed (AssertionError: Scalars are not close!)");
  std::vector<NameDecision> d = represent_base(base, buckets);
  ASSERT_TRUE(restricted(d, "TestX::test_m"));
  EXPECT_EQ(restricted(d, "TestX::test_m")->mode, TestMode::kXfail);
  EXPECT_TRUE(restricted(d, "TestX::test_m")->dtype_precision.empty());

  // A larger factor in ootci.yaml makes the same error a tolerance.
  ToleranceSettings wide;
  wide.factor = 20;
  buckets = bucket_variants(base, reference_caps(), 2, tolerance_policy(wide));
  EXPECT_EQ(buckets[0].cause, Cause::kTolerance);
}

TEST(Tolerance, APassUnderTheProposedPrecisionKeepsTheProposal) {
  // Newest first: passed in the run of the proposal (with its precision), failed in discovery.
  // Not flaky, and not "fixed": the same proposal again, worded without run counts.
  BaseEvidence base{
      "TestX::test_m",
      {variant("test_m_privateuseone_float32", "float32",
               {{"passed", "", ""}, {"passed", "", ""}, {"failed", "AssertionError", kNotClose}})}};
  Bucket b = bucket_variants(base, reference_caps())[0];
  EXPECT_EQ(b.cause, Cause::kTolerance);
  ASSERT_TRUE(b.precision);
  EXPECT_DOUBLE_EQ(b.precision->rtol, 0.0038);
  EXPECT_EQ(b.text.rfind("fails only by a numeric mismatch in the runs it fails: max abs", 0), 0u)
      << b.text;

  // A later run under that precision failing at a later comparison (a test stops at its first
  // failing one) raises the proposal to cover both.
  base.variants[0] =
      variant("test_m_privateuseone_float32", "float32",
              {{"failed", "AssertionError",
                "Tensor-likes are not close!\n\nMismatched elements: 2 / 25 (8.0%)\n"
                "Greatest absolute difference: 0.0003859326243400574 at index (4, 4) (up to "
                "1e-05 allowed)\nGreatest relative difference: 0.010124349361029964 at index "
                "(2, 3) (up to 0.0038 allowed)"},
               {"failed", "AssertionError", kNotClose}});
  b = bucket_variants(base, reference_caps())[0];
  EXPECT_EQ(b.cause, Cause::kTolerance);
  EXPECT_DOUBLE_EQ(b.precision->rtol, 0.013);
}

TEST(Tolerance, AnyOtherFailureInAnyRunKeepsTheUsualRules) {
  BaseEvidence base{"TestX::test_m",
                    {variant("test_m_privateuseone_float32", "float32",
                             {{"failed", "AssertionError", kNotClose},
                              {"failed", "RuntimeError", "something else"}})}};
  EXPECT_EQ(bucket_variants(base, reference_caps())[0].cause, Cause::kFailure);
  // An integer dtype has no reference precision.
  BaseEvidence ints{
      "TestX::test_m",
      {variant("test_m_privateuseone_int64", "int64", {{"failed", "AssertionError", kNotClose}})}};
  EXPECT_EQ(bucket_variants(ints, reference_caps())[0].cause, Cause::kFailure);
}

TEST(Tolerance, AnOpsTestGetsNoDtypeEntryAndSaysWhy) {
  // An include would add float32 to every op of the test; the precision per op and dtype lives
  // in global.supported_ops, which propose does not write: an xfail, with the numbers.
  BaseEvidence base{
      "TestX::test_u",
      {variant("test_u_mul_privateuseone_float32", "float32",
               {{"failed", "AssertionError", kNotClose}}, {}, "mul"),
       variant("test_u_add_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "add")}};
  std::vector<Bucket> buckets = bucket_variants(base, reference_caps());
  std::vector<NameDecision> d = represent_base(base, buckets);
  for (const auto& x : d) EXPECT_TRUE(x.dtype_precision.empty());
  std::map<std::string, TestMode> m = modes(base, d);
  EXPECT_EQ(m["test_u_add_privateuseone_float32"], TestMode::kMandatorySuccess);
  EXPECT_EQ(m["test_u_mul_privateuseone_float32"], TestMode::kSkip);  // ops.exclude, as a failure
  const NameDecision* head = unrestricted(d, "TestX::test_u");
  ASSERT_TRUE(head);
  EXPECT_NE(head->reason.find("max rel error 0.003027697668790597"), std::string::npos)
      << head->reason;
  EXPECT_NE(head->reason.find("but no config entry can carry it (an @ops test"), std::string::npos)
      << head->reason;
}

TEST(Tolerance, OtherFailuresOfTheDtypeKeepItsVariantsOutOfAPrecisionEntry) {
  BaseEvidence a{"TestA::test_m",
                 {variant("test_m_privateuseone_float32", "float32",
                          {{"failed", "AssertionError", kNotClose}})}};
  BaseEvidence b{
      "TestB::test_m",
      {variant("test_m_privateuseone_float32", "float32", {{"failed", "RuntimeError", "boom"}})}};
  std::vector<Bucket> ba = bucket_variants(a, reference_caps());
  std::vector<Bucket> bb = bucket_variants(b, reference_caps());
  std::vector<NameDecision> d = represent_method({&a, &b}, {&ba, &bb}, std::nullopt);
  for (const auto& x : d) {
    EXPECT_TRUE(x.dtype_precision.empty());
    EXPECT_NE(x.mode, TestMode::kMandatorySuccess) << x.reason;
  }
  EXPECT_NE(d.back().reason.find("other float32 variants of the test fail for other reasons"),
            std::string::npos)
      << d.back().reason;
}

}  // namespace
}  // namespace ootci
