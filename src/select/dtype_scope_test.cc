#include "select/dtype_scope.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

using Strings = std::set<std::string>;

// The dtypes of a change to the line holding `marker` inside the only function of `code`.
Strings dtypes_at(const std::string& code, const std::string& marker) {
  SourceText s(code, SourceLanguage::kCpp);
  auto fns = cpp_function_definitions(s);
  EXPECT_EQ(fns.size(), 1u);
  size_t at = code.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  return dtype_scope_at(s, fns[0].first_line, fns[0].last_line, s.line_of(at)).dtypes;
}

TEST(DtypeScope, ConstantsInEverySpelling) {
  EXPECT_EQ(dtype_of_constant("at::kFloat"), "float32");
  EXPECT_EQ(dtype_of_constant("at::ScalarType::Float"), "float32");
  EXPECT_EQ(dtype_of_constant("c10::ScalarType::BFloat16"), "bfloat16");
  EXPECT_EQ(dtype_of_constant("torch::kFloat64"), "float64");
  EXPECT_EQ(dtype_of_constant("kHalf"), "float16");
  EXPECT_EQ(dtype_of_constant("kComplexFloat"), "complex64");
  EXPECT_FALSE(dtype_of_constant("Float"));  // a bare enumerator could be anything
  EXPECT_FALSE(dtype_of_constant("at::kCPU"));
}

TEST(DtypeScope, ABranchOnADtypeNarrowsItsConditionAndBody) {
  std::string code =
      "at::Tensor k(const at::Tensor& self) {\n"
      "  auto out = self.clone();\n"
      "  if (self.scalar_type() == at::ScalarType::Float) return self + 1;\n"
      "  if (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16) {\n"
      "    out.mul_(2);\n"
      "  } else {\n"
      "    out.mul_(3);\n"
      "  }\n"
      "  if (self.scalar_type() != at::kLong) {\n"
      "    out.add_(1);\n"
      "  } else {\n"
      "    out.add_(2);\n"
      "  }\n"
      "  return out;\n"
      "}\n";
  EXPECT_EQ(dtypes_at(code, "auto out"), Strings{});  // every dtype
  EXPECT_EQ(dtypes_at(code, "return self + 1"), Strings{"float32"});
  EXPECT_EQ(dtypes_at(code, "out.mul_(2)"), (Strings{"bfloat16", "float16"}));
  EXPECT_EQ(dtypes_at(code, "if (self.scalar_type() == at::kHalf"),
            (Strings{"bfloat16", "float16"}));
  EXPECT_EQ(dtypes_at(code, "out.mul_(3)"), Strings{});  // every other dtype
  EXPECT_EQ(dtypes_at(code, "out.add_(1)"), Strings{});
  EXPECT_EQ(dtypes_at(code, "out.add_(2)"), Strings{"int64"});
  EXPECT_EQ(dtypes_at(code, "return out"), Strings{});
}

// A tensor the kernel converted itself has the kernel's dtype, whatever the op was called with.
TEST(DtypeScope, ATestOfAConvertedTensorSaysNothing) {
  std::string code =
      "at::Tensor k(const at::Tensor& self) {\n"
      "  auto work = self.to(at::kFloat);\n"
      "  at::ScalarType kind = at::kHalf;\n"
      "  auto common = at::result_type(self, self);\n"
      "  if (work.scalar_type() == at::kFloat) work.mul_(2);\n"
      "  if (kind == at::kHalf) work.mul_(3);\n"
      "  if (common == at::kDouble) work.mul_(4);\n"
      "  return work;\n"
      "}\n";
  EXPECT_EQ(dtypes_at(code, "work.mul_(2)"), Strings{});
  EXPECT_EQ(dtypes_at(code, "work.mul_(3)"), Strings{});
  EXPECT_EQ(dtypes_at(code, "work.mul_(4)"), Strings{"float64"});
}

TEST(DtypeScope, DispatchMacrosNarrowToTheirDtypes) {
  std::string code =
      "void k(at::TensorIterator& iter) {\n"
      "  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, iter.dtype(), \"k\", [&] {\n"
      "    cpu_kernel(iter, [](scalar_t a) { return a * 2; });\n"
      "  });\n"
      "  AT_DISPATCH_INTEGRAL_TYPES(iter.dtype(), \"k2\", [&] {\n"
      "    cpu_kernel(iter, [](scalar_t a) -> scalar_t {\n"
      "      if (a == 0) { return 1; }\n"
      "      return a;\n"
      "    });\n"
      "  });\n"
      "  AT_DISPATCH_SOMETHING_NEW(iter.dtype(), \"k3\", [&] {\n"
      "    other(iter);\n"
      "  });\n"
      "}\n";
  Strings floating = {"bfloat16", "float16", "float32", "float64"};
  EXPECT_EQ(dtypes_at(code, "return a * 2"), floating);
  EXPECT_EQ(dtypes_at(code, "AT_DISPATCH_FLOATING_TYPES_AND2"), floating);
  EXPECT_EQ(dtypes_at(code, "if (a == 0)"), (Strings{"int16", "int32", "int64", "int8", "uint8"}));
  EXPECT_EQ(dtypes_at(code, "other(iter)"), Strings{});  // an unknown macro says nothing
}

TEST(DtypeScope, GuardsAndChecksNarrowWhatFollowsThem) {
  std::string code =
      "at::Tensor k(const at::Tensor& self) {\n"
      "  if (self.scalar_type() != at::kFloat && self.scalar_type() != at::kDouble) {\n"
      "    return slow(self);\n"
      "  }\n"
      "  auto out = fast(self);\n"
      "  TORCH_CHECK(self.scalar_type() == at::kFloat, \"float only here\");\n"
      "  return out.neg_();\n"
      "}\n";
  EXPECT_EQ(dtypes_at(code, "return slow"), Strings{});  // the other dtypes' path
  EXPECT_EQ(dtypes_at(code, "if (self.scalar_type() != at::kFloat"), Strings{});
  EXPECT_EQ(dtypes_at(code, "auto out"), (Strings{"float32", "float64"}));
  EXPECT_EQ(dtypes_at(code, "return out.neg_"), Strings{"float32"});
}

TEST(DtypeScope, AKernelThatHandsOtherDtypesToTheFallbackServesOnlyItsOwn) {
  std::string code =
      "void mul_fault(const c10::OperatorHandle& op, torch::jit::Stack* stack) {\n"
      "  const at::Tensor self = (*stack)[0].toTensor();\n"
      "  if (self.scalar_type() != at::ScalarType::Float) return ootci_ref::cpu_fallback(op, "
      "stack);\n"
      "  at::native::cpu_fallback(op, stack);\n"
      "}\n";
  SourceText s(code, SourceLanguage::kCpp);
  DtypeScope own = kernel_own_dtypes(s, 1, 5, {"ootci_ref::cpu_fallback"});
  EXPECT_EQ(own.dtypes, Strings{"float32"});
  EXPECT_NE(own.why.find("hands every other dtype to the fallback cpu_fallback"), std::string::npos)
      << own.why;
  EXPECT_TRUE(kernel_own_dtypes(s, 1, 5, {"other_fallback"}).every_dtype());
  // A guard that raises for other dtypes changes them (they raise now): every dtype.
  std::string raising =
      "at::Tensor k(const at::Tensor& self) {\n"
      "  if (self.scalar_type() != at::kFloat) return broken(self);\n"
      "  return self;\n"
      "}\n";
  SourceText r(raising, SourceLanguage::kCpp);
  EXPECT_TRUE(kernel_own_dtypes(r, 1, 4, {"cpu_fallback"}).every_dtype());
}

}  // namespace
}  // namespace ootci
