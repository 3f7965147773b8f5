#include "select/bucket.h"

#include <gtest/gtest.h>

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
    t.outcome = r.outcome;
    t.error_class = r.error_class;
    t.message = r.message;
    t.mode = r.mode;
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
       TestMode::mandatory_success,
       Cause::passed,
       "mandatory_success: passed in every run"},
      {"a switched-off op",
       {{"failed", "NotImplementedError", kDisabled}},
       {"aten::empty.memory_format", "aten::transpose.int"},
       TestMode::xfail,
       Cause::missing_op,
       std::string("xfail: aten::transpose.int is not implemented on the device "
                   "(NotImplementedError: ") +
           kDisabled + ")"},
      {"PyTorch's own missing-kernel error",
       {{"failed", "NotImplementedError",
         "Could not run 'aten::addmm.out' with arguments from the 'PrivateUse1' backend.\nmore"}},
       {},
       TestMode::xfail,
       Cause::missing_op,
       "xfail: aten::addmm.out is not implemented on the device (NotImplementedError: Could not "
       "run 'aten::addmm.out' with arguments from the 'PrivateUse1' backend.)"},
      {"crashes every time",
       {{"error", "SIGSEGV", "the test process died"}, {"error", "SIGSEGV", ""}},
       {},
       TestMode::skip,
       Cause::crash,
       "skip: crashes the test process with SIGSEGV in every run"},
      {"crashes once, passes once",
       {{"passed", "", ""}, {"error", "SIGABRT", ""}},
       {},
       TestMode::skip,
       Cause::crash,
       "skip: crashes the test process with SIGABRT in 1 of 2 runs"},
      {"hangs",
       {{"error", "Timeout", "killed after 900 s"}},
       {},
       TestMode::skip,
       Cause::hang,
       "skip: hangs (Timeout) in every run"},
      {"passes only on a rerun",
       {{"passed", "", "", "mandatory_success", true}, {"passed", "", ""}},
       {},
       TestMode::xfail,
       Cause::flaky,
       "flaky: passed only on a rerun"},
      {"passes and fails across runs",
       {{"failed", "AssertionError", "Tensor-likes are not close!\n\nMismatched elements: 1"},
        {"passed", "", ""},
        {"failed", "AssertionError", "Tensor-likes are not close!"}},
       {},
       TestMode::xfail,
       Cause::flaky,
       "flaky: passed in some runs and failed in others (AssertionError: Tensor-likes are not "
       "close!)"},
      {"passed once since failing: not enough to call it fixed",
       {{"passed", "", ""}, {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::xfail,
       Cause::flaky,
       "flaky: passed in some runs and failed in others (RuntimeError: boom)"},
      {"passed in the newest runs after failing: fixed",
       {{"passed", "", ""}, {"xpassed", "", "", "xfail"}, {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::mandatory_success,
       Cause::passed,
       "mandatory_success: passed in every run since it last failed"},
      {"failing in the newest runs after passing: a regression is never hidden",
       {{"failed", "AssertionError", "Scalars are not equal!"},
        {"passed", "", ""},
        {"passed", "", ""}},
       {},
       TestMode::mandatory_success,
       Cause::regressed,
       "mandatory_success: passed in earlier runs, then failed in the newest: a regression "
       "candidate, never demoted (AssertionError: Scalars are not equal!)"},
      {"crashing in a run after passing only in discovery: discovery was wrong",
       {{"error", "SIGSEGV", ""}, {"passed", "", ""}},
       {},
       TestMode::skip,
       Cause::crash,
       "skip: crashes the test process with SIGSEGV in 1 of 2 runs"},
      {"crashing in the newest run after passing",
       {{"error", "SIGSEGV", ""}, {"passed", "", ""}, {"passed", "", ""}},
       {},
       TestMode::mandatory_success,
       Cause::regressed,
       "mandatory_success: passed in earlier runs, then crashed the test process with SIGSEGV in "
       "the newest: a regression candidate, never demoted (SIGSEGV)"},
      {"an unsupported dtype",
       {{"failed", "RuntimeError", "\"addmm_impl_cpu_\" not implemented for 'ComplexFloat'"}},
       {},
       TestMode::xfail,
       Cause::missing_dtype,
       "xfail: dtype complex64 is not supported on the device (RuntimeError: \"addmm_impl_cpu_\" "
       "not implemented for 'ComplexFloat')"},
      {"a failure inside kernels the device has: strict",
       {{"failed", "AssertionError", "Scalars are not equal!"},
        {"failed", "AssertionError", "Scalars are not equal!"}},
       {"aten::as_strided", "aten::view"},
       TestMode::xfail_strict,
       Cause::supported_ops,
       "xfail_strict: fails in every run although every op it calls has a device kernel (2 ops), "
       "so a pass means the bug is fixed (AssertionError: Scalars are not equal!)"},
      {"a failure through the fallback: no cause to name",
       {{"failed", "AssertionError", "Scalars are not equal!"}},
       {"aten::view", "aten::add.Tensor"},
       TestMode::xfail,
       Cause::failure,
       "xfail: fails in every run (AssertionError: Scalars are not equal!)"},
      {"an xfail later, failing since discovery: the real error is quoted",
       {{"xfailed", "", "ootci plan: xfail (c.yaml:3:15)", "xfail"},
        {"failed", "RuntimeError", "boom"}},
       {},
       TestMode::xfail,
       Cause::failure,
       "xfail: fails in every run (RuntimeError: boom)"},
      {"a strict xfail that passed counts as a pass",
       {{"failed", "XPASS(strict)", "[XPASS(strict)] ootci plan", "xfail_strict"},
        {"xpassed", "", "", "xfail"}},
       {},
       TestMode::mandatory_success,
       Cause::passed,
       "mandatory_success: passed in every run"},
      {"upstream's expected failure is green",
       {{"xfailed", "", "reason: "}},
       {},
       TestMode::mandatory_success,
       Cause::passed,
       "mandatory_success: upstream expects it to fail on this device (xfailed in every run)"},
      {"upstream skips it",
       {{"skipped", "", "Skipped: Only runs on cuda"},
        {"skipped", "", "Skipped: Only runs on cuda"}},
       {},
       TestMode::skip,
       Cause::never_ran,
       "skip: upstream skips it on this device (Skipped: Only runs on cuda)"},
      {"an op named in an error that the device does have is not missing",
       {{"failed", "NotImplementedError", "aten::view is not implemented for this layout"}},
       {},
       TestMode::xfail,
       Cause::failure,
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
  EXPECT_EQ(b[0].cause, Cause::missing_op);
  EXPECT_EQ(b[0].op, "aten::zeros");
  EXPECT_EQ(b[0].reason(),
            "xfail: aten::zeros, aten::add.Tensor are not implemented on the device "
            "(RuntimeError: odd)");
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
  EXPECT_EQ(b[2].mode, TestMode::mandatory_success);  // the formatted name counts
}

TEST(Bucket, AFailureOfOneDtypeWhileTheOthersPassNamesTheDtype) {
  BaseEvidence base{"TestX::test_a",
                    {variant("test_a_privateuseone_complex64", "complex64",
                             {{"failed", "AssertionError", "Tensor-likes are not close!"}}),
                     variant("test_a_privateuseone_float32", "float32", {{"passed", "", ""}}),
                     variant("test_a_privateuseone_int64", "int64", {{"passed", "", ""}})}};
  std::vector<Bucket> b = bucket_variants(base, reference_caps());
  EXPECT_EQ(b[0].cause, Cause::dtype_specific);
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
  EXPECT_EQ(b[1].cause, Cause::failure);
  EXPECT_EQ(b[2].cause, Cause::failure);
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
  EXPECT_FALSE(d[0].is_variant());
  EXPECT_EQ(d[0].mode, TestMode::xfail);
  EXPECT_EQ(d[0].reason, std::string("xfail: aten::transpose.int is not implemented on the "
                                     "device (NotImplementedError: ") +
                             kDisabled + ")");
}

TEST(Represent, MixedVariantsKeepTheMajorityAndNameTheRest) {
  BaseEvidence base{
      "TestX::test_a",
      {variant("test_a_privateuseone_complex128", "complex128",
               {{"failed", "RuntimeError", "\"abs\" not implemented for 'ComplexDouble'"}}),
       variant("test_a_privateuseone_complex64", "complex64", {{"error", "SIGSEGV", ""}}),
       variant("test_a_privateuseone_float32", "float32", {{"passed", "", ""}}),
       variant("test_a_privateuseone_float64", "float64", {{"passed", "", ""}}),
       variant("test_a_privateuseone_int8", "int8", {{"skipped", "", "Skipped: no int8"}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "TestX::test_a");
  EXPECT_EQ(d[0].mode, TestMode::mandatory_success);
  EXPECT_EQ(d[0].dtypes_exclude, std::vector<std::string>{"complex64"});
  EXPECT_TRUE(d[0].ops_exclude.empty());
  EXPECT_EQ(d[0].reason,
            "mandatory_success: passed in every run; excluded dtype complex64: crashes the test "
            "process with SIGSEGV in every run");
  EXPECT_EQ(d[1].name, "TestX::test_a_privateuseone_complex128");
  EXPECT_EQ(d[1].variant, "test_a_privateuseone_complex128");
  EXPECT_EQ(d[1].base, "TestX::test_a");
  EXPECT_EQ(d[1].mode, TestMode::xfail);
  EXPECT_EQ(d[1].reason,
            "xfail: dtype complex128 is not supported on the device (RuntimeError: \"abs\" not "
            "implemented for 'ComplexDouble')");

  // The decisions reproduce every bucket.
  DecisionIndex index(d);
  EXPECT_EQ(index.mode(base.base, base.variants[0]), TestMode::xfail);
  EXPECT_EQ(index.mode(base.base, base.variants[1]), TestMode::skip);
  EXPECT_EQ(index.mode(base.base, base.variants[2]), TestMode::mandatory_success);
  EXPECT_EQ(index.mode(base.base, base.variants[3]), TestMode::mandatory_success);
}

TEST(Represent, AnOpWhoseVariantsAllCrashIsExcluded) {
  BaseEvidence base{
      "TestX::test_o",
      {variant("test_o_add_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_add_privateuseone_int64", "int64", {{"passed", "", ""}}, {}, "add"),
       variant("test_o_conj_privateuseone_float32", "float32", {{"error", "SIGSEGV", ""}}, {},
               "conj"),
       variant("test_o_conj_privateuseone_int64", "int64", {{"error", "SIGSEGV", ""}}, {}, "conj"),
       variant("test_o_mul_privateuseone_int64", "int64", {{"error", "Timeout", ""}}, {}, "mul"),
       variant("test_o_mul_privateuseone_float32", "float32", {{"passed", "", ""}}, {}, "mul")}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].ops_exclude, std::vector<std::string>{"conj"});
  EXPECT_TRUE(d[0].dtypes_exclude.empty());
  EXPECT_EQ(d[1].name, "TestX::test_o_mul_privateuseone_int64");
  EXPECT_EQ(d[1].mode, TestMode::skip);
  EXPECT_EQ(d[1].reason, "skip: hangs (Timeout) in every run");
}

TEST(Represent, AMultiDtypeVariantBlocksExcludingADtypeItDoesNotFailFor) {
  BaseEvidence base{
      "TestX::test_m",
      {variant("test_m_privateuseone_int64", "int64", {{"error", "SIGSEGV", ""}}),
       variant("test_m_privateuseone_float32_int64", "float32,int64", {{"passed", "", ""}}),
       variant("test_m_privateuseone_float32", "float32", {{"passed", "", ""}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].dtypes_exclude.empty());
  EXPECT_EQ(d[1].name, "TestX::test_m_privateuseone_int64");
  EXPECT_EQ(d[1].mode, TestMode::skip);
}

TEST(Represent, AMostlyCrashingTestIsSkippedWithItsPassingVariantsNamed) {
  BaseEvidence base{"TestX::test_c",
                    {variant("test_c_privateuseone_float32", "float32", {{"error", "SIGSEGV", ""}}),
                     variant("test_c_privateuseone_float64", "float64", {{"error", "SIGSEGV", ""}}),
                     variant("test_c_privateuseone_int64", "int64", {{"passed", "", ""}})}};
  std::vector<NameDecision> d = represent_base(base, bucket_variants(base, reference_caps()));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].mode, TestMode::skip);
  EXPECT_TRUE(d[0].dtypes_exclude.empty());
  EXPECT_EQ(d[1].mode, TestMode::mandatory_success);
  DecisionIndex index(d);
  EXPECT_EQ(index.mode(base.base, base.variants[2]), TestMode::mandatory_success);
  EXPECT_EQ(index.mode(base.base, base.variants[0]), TestMode::skip);
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
  EXPECT_EQ(d[0].mode, TestMode::xfail);
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
  EXPECT_EQ(d[0].mode, TestMode::skip);
  EXPECT_EQ(d[0].reason, "skip: upstream skips it on this device (Skipped: Only runs on cuda)");
}

TEST(BucketHelpers, NamesAndQuotes) {
  EXPECT_EQ(regex_escape("test_a_(1, 2)_x.y"), "test_a_\\(1, 2\\)_x\\.y");
  EXPECT_EQ(variant_config_name("TestX::test_a", "test_a_privateuseone"),
            "TestX::test_a_privateuseone");
  EXPECT_EQ(variant_config_name("test_plain", "test_plain"), "test_plain");
  EXPECT_EQ(dtype_of_scalar_type("ComplexFloat"), "complex64");
  EXPECT_EQ(dtype_of_scalar_type("Long"), "int64");
  EXPECT_EQ(dtype_of_scalar_type("Quaternion"), "");
  EXPECT_EQ(aten_ops_in("aten::add.Tensor then aten::add.Tensor and aten::mul"),
            (std::vector<std::string>{"aten::add.Tensor", "aten::mul"}));
  EXPECT_EQ(quote_error("RuntimeError", "RuntimeError: boom\nstack"), "RuntimeError: boom");
  EXPECT_EQ(quote_error("SIGSEGV", ""), "SIGSEGV");
  EXPECT_EQ(quote_error("", std::string(300, 'x')), std::string(160, 'x') + "...");
}

}  // namespace
}  // namespace ootci
