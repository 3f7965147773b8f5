#include "select/native_functions.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

using Ops = std::set<std::string>;

TEST(OpFamily, DropsOverloadAndOneTrailingUnderscore) {
  EXPECT_EQ(op_family("aten::add.Tensor"), "aten::add");
  EXPECT_EQ(op_family("aten::add_.Tensor"), "aten::add");
  EXPECT_EQ(op_family("aten::add.out"), "aten::add");
  EXPECT_EQ(op_family("aten::resize_"), "aten::resize");
  EXPECT_EQ(op_family("aten::_copy_from"), "aten::_copy_from");
  EXPECT_EQ(op_family("aten::__and__.Tensor"), "aten::__and__");
  EXPECT_EQ(op_family("aten::__iand__.Tensor"), "aten::__iand__");
  EXPECT_EQ(op_family("myns::op_"), "myns::op");
}

TEST(NativeFunctions, EntriesDispatchFunctionsAndNames) {
  NativeFunctions nf(
      "# comment\n"
      "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"  // 2
      "  structured_delegate: add.out\n"
      "- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
      "Tensor(a!)\n"  // 4
      "  dispatch:\n"
      "    CPU, CUDA: add_out\n"
      "    SparseCPU: add_out_sparse_cpu  # sparse\n"
      "  tags: pointwise\n"
      "- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"  // 9
      "  dispatch:\n"
      "    CompositeExplicitAutograd: sum\n");
  EXPECT_EQ(nf.size(), 3u);
  EXPECT_FALSE(nf.op_at(1));
  EXPECT_EQ(nf.op_at(3), "aten::add.Tensor");
  EXPECT_EQ(nf.op_at(8), "aten::add.out");
  EXPECT_EQ(nf.op_at(11), "aten::sum");
  EXPECT_EQ(nf.ops_of_function("add_out"), Ops{"aten::add.out"});
  EXPECT_EQ(nf.ops_of_function("add_out_sparse_cpu"), Ops{"aten::add.out"});
  // By name: kernel suffixes stripped until a base name matches.
  EXPECT_EQ(nf.ops_of_function("add_kernel"), (Ops{"aten::add.Tensor", "aten::add.out"}));
  EXPECT_EQ(nf.ops_of_function("cpu_sum_kernel_impl"), Ops{"aten::sum"});
  EXPECT_TRUE(nf.ops_of_function("shared_helper").empty());
}

}  // namespace
}  // namespace ootci
