#include "evidence/code_evidence.h"

#include <gtest/gtest.h>

#include "testing/test_env.h"

namespace ootci {
namespace {

using Ops = std::set<std::string>;

const OpRegistration* find(const CodeEvidence& e, const std::string& op) {
  for (const auto& r : e.registrations)
    if (r.op == op) return &r;
  return nullptr;
}

const OpRegistration* fallback(const CodeEvidence& e) {
  for (const auto& r : e.registrations)
    if (r.kind == "fallback") return &r;
  return nullptr;
}

TEST(CodeEvidence, TheReferenceBackendsTenKernelsAndItsFallback) {
  CodeEvidence e =
      scan_backend_sources(source_dir() + "/examples/reference-backend", "PrivateUse1");
  const Ops in_kernels_cpp = {"aten::empty.memory_format",
                              "aten::empty_strided",
                              "aten::_copy_from",
                              "aten::_copy_from_and_resize",
                              "aten::resize_",
                              "aten::as_strided",
                              "aten::view",
                              "aten::_reshape_alias"};
  const Ops in_views_cpp = {"aten::view_as_real", "aten::view_as_complex"};
  Ops all = in_kernels_cpp;
  all.insert(in_views_cpp.begin(), in_views_cpp.end());
  EXPECT_EQ(e.supported_ops, all);
  ASSERT_EQ(e.registrations.size(), 11u);
  EXPECT_TRUE(e.has_fallback);
  EXPECT_EQ(e.fallback_files, std::vector<std::string>{"csrc/kernels.cpp"});
  EXPECT_EQ(e.ops_by_file.at("csrc/kernels.cpp"), in_kernels_cpp);
  EXPECT_EQ(e.ops_by_file.at("csrc/views.cpp"), in_views_cpp);

  // Kernels defined in the file: from the declaration's first line to the closing brace.
  const OpRegistration* empty = find(e, "aten::empty.memory_format");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->file, "csrc/kernels.cpp");
  EXPECT_EQ(empty->kind, "impl");
  EXPECT_EQ(empty->line, 71);
  EXPECT_EQ(empty->function, "ootci_ref::empty_memory_format");
  EXPECT_EQ(empty->function_file, "csrc/kernels.cpp");
  EXPECT_EQ(empty->function_begin, 20);
  EXPECT_EQ(empty->function_end, 25);
  const OpRegistration* strided = find(e, "aten::empty_strided");
  EXPECT_EQ(std::make_pair(strided->function_begin, strided->function_end), std::make_pair(27, 32));
  const OpRegistration* copy = find(e, "aten::_copy_from");
  EXPECT_EQ(copy->line, 73);
  EXPECT_EQ(std::make_pair(copy->function_begin, copy->function_end), std::make_pair(45, 53));
  const OpRegistration* resize = find(e, "aten::_copy_from_and_resize");
  EXPECT_EQ(std::make_pair(resize->function_begin, resize->function_end), std::make_pair(55, 58));

  // Kernels from ATen itself are named but not defined here.
  const OpRegistration* view = find(e, "aten::view");
  EXPECT_EQ(view->line, 78);
  EXPECT_EQ(view->function, "at::native::view");
  EXPECT_EQ(view->function_file, "");
  EXPECT_EQ(view->function_begin, 0);

  // The boxed fallback's kernel comes from makeFromBoxedFunction<&ootci_ref::cpu_fallback>.
  const OpRegistration* fb = fallback(e);
  ASSERT_TRUE(fb);
  EXPECT_EQ(fb->line, 84);
  EXPECT_EQ(fb->op, "");
  EXPECT_EQ(fb->function, "ootci_ref::cpu_fallback");
  EXPECT_EQ(std::make_pair(fb->function_begin, fb->function_end), std::make_pair(61, 65));
}

TEST(CodeEvidence, OpsTouchedByChangesToTheReferenceBackend) {
  CodeEvidence e =
      scan_backend_sources(source_dir() + "/examples/reference-backend", "PrivateUse1");
  auto touched = ops_touched(e, "csrc/kernels.cpp", {{50, 51}});  // inside copy_from
  EXPECT_EQ(touched.ops, Ops{"aten::_copy_from"});
  EXPECT_FALSE(touched.touches_fallback);
  EXPECT_FALSE(touched.whole_file);

  touched = ops_touched(e, "csrc/kernels.cpp", {{78, 78}});  // the view registration
  EXPECT_EQ(touched.ops, Ops{"aten::view"});

  touched = ops_touched(e, "csrc/kernels.cpp", {{63, 63}});  // inside cpu_fallback
  EXPECT_TRUE(touched.touches_fallback);
  EXPECT_TRUE(touched.ops.empty());

  // host_view (lines 36-43) is a helper no registration names: every op of the file, and the
  // fallback registered there.
  touched = ops_touched(e, "csrc/kernels.cpp", {{40, 40}});
  EXPECT_TRUE(touched.whole_file);
  EXPECT_TRUE(touched.touches_fallback);
  EXPECT_EQ(touched.ops, e.ops_by_file.at("csrc/kernels.cpp"));

  // A file that registers nothing: nothing known (the caller decides).
  touched = ops_touched(e, "csrc/device.cpp", {{12, 14}});
  EXPECT_TRUE(touched.ops.empty());
  EXPECT_FALSE(touched.whole_file);
  EXPECT_FALSE(touched.touches_fallback);
}

TEST(CodeEvidence, LambdaKernelsCommentsWithBracesAndOtherKeys) {
  std::string cpp = R"(#include <torch/library.h>
#define OPEN_BRACE {
namespace dev {
/* a comment with a brace { and a fake
   TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("fake", f); } */
at::Tensor add_kernel(const at::Tensor& a, const at::Tensor& b) {
  const char* s = "}}} not code {";  // nor this }
  char c = '}';
  return a;
}
at::Tensor mul_kernel(const at::Tensor& a, const at::Tensor& b);  // declared only
}  // namespace dev

TORCH_LIBRARY_IMPL(aten, PrivateUse1, lib) {
  lib.impl("add.Tensor", TORCH_FN(dev::add_kernel));
  lib.impl("mul.Tensor", &dev::mul_kernel);
  lib.impl(
      "sub.Tensor",
      [](const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
        return a;
      });
  // lib.impl("div.Tensor", div_kernel);
}

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("abs", abs_kernel);
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("relu", relu_autograd);
}
)";
  CodeEvidence e = scan_sources({{"src/ops.cpp", cpp}}, "PrivateUse1");
  EXPECT_EQ(e.supported_ops,
            (Ops{"aten::add.Tensor", "aten::mul.Tensor", "aten::sub.Tensor", "aten::relu"}));
  EXPECT_FALSE(e.has_fallback);
  const OpRegistration* add = find(e, "aten::add.Tensor");
  EXPECT_EQ(add->line, 15);
  EXPECT_EQ(add->function, "dev::add_kernel");
  EXPECT_EQ(std::make_pair(add->function_begin, add->function_end), std::make_pair(6, 10));
  const OpRegistration* mul = find(e, "aten::mul.Tensor");
  EXPECT_EQ(mul->function, "dev::mul_kernel");
  EXPECT_EQ(mul->function_begin, 0);  // declared, not defined
  const OpRegistration* sub = find(e, "aten::sub.Tensor");
  EXPECT_EQ(sub->line, 17);
  EXPECT_EQ(sub->end_line, 21);
  EXPECT_EQ(sub->function, "<lambda>");
  EXPECT_EQ(std::make_pair(sub->function_begin, sub->function_end), std::make_pair(19, 21));

  EXPECT_EQ(ops_touched(e, "src/ops.cpp", {{8, 8}}).ops, Ops{"aten::add.Tensor"});
  EXPECT_EQ(ops_touched(e, "src/ops.cpp", {{20, 20}}).ops, Ops{"aten::sub.Tensor"});
  EXPECT_EQ(ops_touched(e, "src/ops.cpp", {{18, 18}}).ops, Ops{"aten::sub.Tensor"});
}

TEST(CodeEvidence, KernelsDefinedInAnotherFile) {
  CodeEvidence e = scan_sources(
      {{"csrc/register.cpp",
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
        "  m.impl(\"abs\", TORCH_FN(dev::abs));\n"
        "}\n"
        "TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {\n"
        "  m.fallback(torch::CppFunction::makeFromBoxedFunction<&dev::fallback>());\n"
        "}\n"},
       {"csrc/ops/unary.cpp",
        "namespace dev {\n"
        "// abs\n"
        "at::Tensor abs(const at::Tensor& self) {\n"
        "  return self;\n"
        "}\n"
        "}\n"},
       {"csrc/fallback.cpp", "void dev::fallback(const c10::OperatorHandle& op, Stack* s)\n{\n}\n"},
       {"README.md", "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl(\"neg\", f); }"}},
      "PrivateUse1");
  EXPECT_EQ(e.supported_ops, Ops{"aten::abs"});
  const OpRegistration* abs = find(e, "aten::abs");
  EXPECT_EQ(abs->function_file, "csrc/ops/unary.cpp");
  EXPECT_EQ(std::make_pair(abs->function_begin, abs->function_end), std::make_pair(3, 5));
  EXPECT_EQ(e.ops_by_file.at("csrc/ops/unary.cpp"), Ops{"aten::abs"});
  EXPECT_EQ(e.fallback_files, (std::vector<std::string>{"csrc/fallback.cpp", "csrc/register.cpp"}));
  EXPECT_EQ(ops_touched(e, "csrc/ops/unary.cpp", {{4, 4}}).ops, Ops{"aten::abs"});
  EXPECT_TRUE(ops_touched(e, "csrc/fallback.cpp", {{2, 3}}).touches_fallback);
}

TEST(CodeEvidence, PythonRegistrations) {
  std::string py = R"(import torch
from torch.library import Library, impl

_lib = torch.library.Library("aten", "IMPL")
_dev = Library("aten", "IMPL", "PrivateUse1")


def neg_kernel(x):
    # a comment with ( and "
    return x


def log_kernel(x):
    return x


_lib.impl("neg", neg_kernel, "PrivateUse1")
_lib.impl("log", log_kernel, "CPU")
_dev.impl("exp.default", lambda x: x)
_dev.impl("sin", fn=log_kernel)


@torch.library.impl(_lib, "cos", "PrivateUse1")
def cos_kernel(x):
    y = x

    return y


@impl(_lib, "tan", "CUDA")
def tan_kernel(x):
    return x
)";
  CodeEvidence e = scan_sources({{"pkg/ops.py", py}}, "PrivateUse1");
  EXPECT_EQ(e.supported_ops, (Ops{"aten::neg", "aten::exp", "aten::sin", "aten::cos"}));
  const OpRegistration* neg = find(e, "aten::neg");
  EXPECT_EQ(neg->kind, "python");
  EXPECT_EQ(neg->line, 17);
  EXPECT_EQ(neg->function, "neg_kernel");
  EXPECT_EQ(std::make_pair(neg->function_begin, neg->function_end), std::make_pair(8, 10));
  const OpRegistration* exp = find(e, "aten::exp");
  EXPECT_EQ(exp->function, "<lambda>");
  EXPECT_EQ(exp->function_begin, 19);
  EXPECT_EQ(find(e, "aten::sin")->function, "log_kernel");
  const OpRegistration* cos = find(e, "aten::cos");
  EXPECT_EQ(cos->line, 23);
  EXPECT_EQ(cos->function, "cos_kernel");
  EXPECT_EQ(std::make_pair(cos->function_begin, cos->function_end), std::make_pair(23, 27));
  EXPECT_EQ(ops_touched(e, "pkg/ops.py", {{26, 26}}).ops, Ops{"aten::cos"});
  EXPECT_EQ(ops_touched(e, "pkg/ops.py", {{14, 14}}).ops, Ops{"aten::sin"});
  EXPECT_FALSE(e.has_fallback);
}

// PyTorch's OpenReg (torch 2.6, pytorch_openreg/_aten_impl.py) computes every op through a Python
// boxed fallback, registered with keyword arguments, beside a few Python kernels.
TEST(CodeEvidence, APythonBoxedFallback) {
  std::string py = R"(import torch


def _openreg_kernel_fallback(op, *args, **kwargs):
    return op(*args, **kwargs)


def _copy_from(from_, to_):
    return to_


_openreg_lib = torch.library.Library("_", "IMPL")
_openreg_lib.fallback(_openreg_kernel_fallback, dispatch_key="PrivateUse1")
_cpu_lib = torch.library.Library("_", "IMPL")
_cpu_lib.fallback(_openreg_kernel_fallback, dispatch_key="CPU")

_openreg_lib_aten = torch.library.Library("aten", "IMPL")
_openreg_lib_aten.impl("_copy_from", _copy_from, dispatch_key="PrivateUse1")
)";
  CodeEvidence e = scan_sources({{"pytorch_openreg/_aten_impl.py", py}}, "PrivateUse1");
  EXPECT_TRUE(e.has_fallback);
  EXPECT_EQ(e.fallback_files, std::vector<std::string>{"pytorch_openreg/_aten_impl.py"});
  EXPECT_EQ(e.supported_ops, Ops{"aten::_copy_from"});
  auto fallbacks = std::count_if(e.registrations.begin(), e.registrations.end(),
                                 [](const OpRegistration& r) { return r.kind == "fallback"; });
  EXPECT_EQ(fallbacks, 1);  // the CPU one is another key's
  // A change inside the fallback's kernel touches the fallback.
  EXPECT_TRUE(ops_touched(e, "pytorch_openreg/_aten_impl.py", {{5, 5}}).touches_fallback);
}

TEST(CodeEvidence, NormalizesOpNames) {
  EXPECT_EQ(normalize_op_name("add.Tensor"), "aten::add.Tensor");
  EXPECT_EQ(normalize_op_name("aten::add.Tensor"), "aten::add.Tensor");
  EXPECT_EQ(normalize_op_name("add"), "aten::add");
  EXPECT_EQ(normalize_op_name("aten.add.Tensor"), "aten::add.Tensor");
  EXPECT_EQ(normalize_op_name("aten::sum.default"), "aten::sum");
  EXPECT_EQ(normalize_op_name("myns::op"), "myns::op");
}

}  // namespace
}  // namespace ootci
