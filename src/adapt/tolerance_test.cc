#include "adapt/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ootci {
namespace {

// Messages as torch 1.13.1's _make_mismatch_msg writes them (str(AssertionError), as
// run_reporter.py stores it), taken from real runs on the reference backend.
constexpr const char* kTensor =
    "Tensor-likes are not close!\n\n"
    "Mismatched elements: 30 / 30 (100.0%)\n"
    "Greatest absolute difference: 0.0066814422607421875 at index (2, 1) (up to 1e-05 allowed)\n"
    "Greatest relative difference: 0.003027697668790597 at index (7, 2) (up to 1.3e-06 allowed)";
constexpr const char* kScalar =
    "Scalars are not close!\n\n"
    "Absolute difference: 0.0009482800960540771 (up to 1e-05 allowed)\n"
    "Relative difference: 0.0030176038429283094 (up to 1.3e-06 allowed)";

TEST(ParseMismatch, TensorLikes) {
  std::optional<Mismatch> m = parse_mismatch(kTensor);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->abs_diff, 0.0066814422607421875);
  EXPECT_DOUBLE_EQ(m->rel_diff, 0.003027697668790597);
  EXPECT_DOUBLE_EQ(m->atol, 1e-05);
  EXPECT_DOUBLE_EQ(m->rtol, 1.3e-06);
}

TEST(ParseMismatch, ScalarsHaveNoIndex) {
  std::optional<Mismatch> m = parse_mismatch(kScalar);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->abs_diff, 0.0009482800960540771);
  EXPECT_DOUBLE_EQ(m->rel_diff, 0.0030176038429283094);
  EXPECT_DOUBLE_EQ(m->atol, 1e-05);
  EXPECT_DOUBLE_EQ(m->rtol, 1.3e-06);
}

TEST(ParseMismatch, NanInfEqualityIdentifiersAndSuffixes) {
  std::optional<Mismatch> nan = parse_mismatch(
      "Tensor-likes are not close!\n\nMismatched elements: 1813 / 943593 (0.2%)\n"
      "Greatest absolute difference: nan at index (0, 239) (up to 1e-05 allowed)\n"
      "Greatest relative difference: nan at index (0, 239) (up to 1.3e-06 allowed)");
  ASSERT_TRUE(nan);
  EXPECT_TRUE(std::isnan(nan->abs_diff));
  EXPECT_TRUE(std::isnan(nan->rel_diff));

  // An expected 0 gives inf; a 1-D index prints as "(1,)".
  std::optional<Mismatch> inf = parse_mismatch(
      "Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
      "Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)\n"
      "Greatest relative difference: inf at index (0,) (up to 1.3e-06 allowed)");
  ASSERT_TRUE(inf);
  EXPECT_DOUBLE_EQ(inf->abs_diff, 2.0);
  EXPECT_TRUE(std::isinf(inf->rel_diff));

  // atol = rtol = 0: "not equal!" and no "(up to ... allowed)"; integers print as ints.
  std::optional<Mismatch> equal =
      parse_mismatch("Scalars are not equal!\n\nAbsolute difference: 3\nRelative difference: 0.5");
  ASSERT_TRUE(equal);
  EXPECT_DOUBLE_EQ(equal->abs_diff, 3);
  EXPECT_DOUBLE_EQ(equal->atol, 0);
  EXPECT_DOUBLE_EQ(equal->rtol, 0);

  // A custom identifier, the item a sequence failed at, and assertEqual's " : msg" suffix.
  std::optional<Mismatch> wrapped = parse_mismatch(
      "The values for attribute 'grad' are not close!\n\n"
      "Absolute difference: 0.5 (up to 1e-05 allowed)\n"
      "Relative difference: 0.25 (up to 1.3e-06 allowed)\n\n"
      "The failure occurred for item [1] : results differ");
  ASSERT_TRUE(wrapped);
  EXPECT_DOUBLE_EQ(wrapped->rel_diff, 0.25);
}

TEST(ParseMismatch, OtherErrorsAndCutMessagesAreNotMismatches) {
  EXPECT_FALSE(
      parse_mismatch("The values for attribute 'shape' do not match: "
                     "torch.Size([2]) != torch.Size([3])."));
  EXPECT_FALSE(parse_mismatch("False is not true"));
  EXPECT_FALSE(parse_mismatch(""));
  // Cut before the relative line (a stored message is at most 2000 characters).
  EXPECT_FALSE(
      parse_mismatch("Tensor-likes are not close!\n\nMismatched elements: 1 / 3\n"
                     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 all"));
}

TEST(ToleranceNumbers, RoundUpToTwoSignificantDigits) {
  EXPECT_DOUBLE_EQ(round_up(0.0037845), 0.0038);
  EXPECT_DOUBLE_EQ(round_up(0.0031), 0.0031);  // already round: unchanged
  EXPECT_DOUBLE_EQ(round_up(1e-05), 1e-05);
  EXPECT_DOUBLE_EQ(round_up(12.01), 13);
  EXPECT_DOUBLE_EQ(round_up(0.30000001), 0.31);
  EXPECT_EQ(format_number(0.0038), "0.0038");
  EXPECT_EQ(format_number(1e-05), "1e-05");
  EXPECT_EQ(format_number(std::nan("")), "nan");
}

TEST(TolerancePolicy, DefaultsAndOverrides) {
  TolerancePolicy p = tolerance_policy();
  EXPECT_DOUBLE_EQ(p.factor, 4);
  ASSERT_TRUE(p.of("float32"));
  EXPECT_EQ(p.of("float32")->source, "bfloat16");
  EXPECT_DOUBLE_EQ(p.of("float32")->tolerance.rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(p.of("float32")->tolerance.atol, 1e-5);
  EXPECT_EQ(p.of("float64")->source, "float32");
  EXPECT_EQ(p.of("float16")->source, "float16");
  EXPECT_EQ(p.of("complex64")->source, "bfloat16");
  EXPECT_FALSE(p.of("int64"));

  ToleranceSettings s;
  s.factor = 2;
  s.reference["float32"] = {"float16", {}, {}};
  s.reference["float64"] = {"", 1e-6, 1e-5};
  p = tolerance_policy(s);
  EXPECT_DOUBLE_EQ(p.factor, 2);
  EXPECT_EQ(p.of("float32")->source, "float16");
  EXPECT_DOUBLE_EQ(p.of("float32")->tolerance.rtol, 1e-3);
  EXPECT_EQ(p.of("float64")->source, "select.tolerance");
  EXPECT_DOUBLE_EQ(p.of("float64")->tolerance.rtol, 1e-5);
  EXPECT_EQ(p.of("bfloat16")->source, "bfloat16");  // untouched entries keep their default
}

TEST(JudgeTolerance, WithinTheFactorProposesAPrecisionThatCoversTheError) {
  // Two runs (float32 computed through bfloat16): the greatest of each number counts.
  std::vector<Mismatch> seen = {*parse_mismatch(kTensor), *parse_mismatch(kScalar)};
  std::optional<ToleranceVerdict> v = judge_tolerance(seen, "float32", tolerance_policy());
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->within);
  EXPECT_DOUBLE_EQ(v->observed.rtol, 0.003027697668790597);
  EXPECT_DOUBLE_EQ(v->observed.atol, 0.0066814422607421875);
  // 1.25 x 0.0030277 = 0.0037846, up to 2 digits; atol stays the reference's.
  EXPECT_DOUBLE_EQ(v->proposed.rtol, 0.0038);
  EXPECT_DOUBLE_EQ(v->proposed.atol, 1e-05);
  EXPECT_GE(v->proposed.rtol, v->observed.rtol);
  EXPECT_EQ(v->text,
            "fails only by a numeric mismatch in every run: max abs error 0.0066814422607421875, "
            "max rel error 0.003027697668790597 (allowed atol 1e-05, rtol 1.3e-06); within 4x "
            "float32's reference precision (bfloat16's default rtol 0.016, atol 1e-05), so it "
            "runs with atol 1e-05, rtol 0.0038");
}

TEST(JudgeTolerance, BeyondTheFactorOrNanProposesNothing) {
  Mismatch far{0.5, 0.199, 1e-05, 1.3e-06};  // one mantissa bit left: 20% off
  std::optional<ToleranceVerdict> v = judge_tolerance({far}, "float32", tolerance_policy());
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->within);
  EXPECT_EQ(v->text,
            "fails only by a numeric mismatch in every run: max abs error 0.5, max rel error "
            "0.199 (allowed atol 1e-05, rtol 1.3e-06); beyond 4x float32's reference precision "
            "(bfloat16's default rtol 0.016, atol 1e-05), that is rtol 0.064: no tolerance "
            "proposed");

  // The same error is within a larger factor.
  ToleranceSettings wide;
  wide.factor = 20;
  EXPECT_TRUE(judge_tolerance({far}, "float32", tolerance_policy(wide))->within);

  Mismatch nan{std::nan(""), std::nan(""), 1e-05, 1.3e-06};
  v = judge_tolerance({far, nan}, "float32", tolerance_policy(wide));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->within);
  EXPECT_NE(v->text.find("a NaN where the reference has a number"), std::string::npos) << v->text;

  // No reference for integers: nothing to judge.
  EXPECT_FALSE(judge_tolerance({far}, "int64", tolerance_policy()));
  EXPECT_FALSE(judge_tolerance({}, "float32", tolerance_policy()));
}

TEST(JudgeTolerance, AnExpectedZeroIsJudgedByItsAbsoluteError) {
  Mismatch zero{2e-05, INFINITY, 1e-05, 1.3e-06};
  std::optional<ToleranceVerdict> v = judge_tolerance({zero}, "float32", tolerance_policy());
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->within);  // 2e-05 <= 4 x 1e-05
  EXPECT_DOUBLE_EQ(v->proposed.atol, 2.5e-05);
  EXPECT_GE(v->proposed.atol, zero.abs_diff);
  zero.abs_diff = 1e-3;
  EXPECT_FALSE(judge_tolerance({zero}, "float32", tolerance_policy())->within);
}

}  // namespace
}  // namespace ootci
