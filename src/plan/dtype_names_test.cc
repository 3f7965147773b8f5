#include "plan/dtype_names.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(DtypeNames, ScalarTypeNamesInMessages) {
  EXPECT_EQ(dtype_of_scalar_type("ComplexFloat"), "complex64");
  EXPECT_EQ(dtype_of_scalar_type("Long"), "int64");
  EXPECT_EQ(dtype_of_scalar_type("BFloat16"), "bfloat16");
  EXPECT_EQ(dtype_of_scalar_type("Quaternion"), "");
  EXPECT_EQ(dtype_of_scalar_type("float"), "");  // c10's spelling only
}

TEST(DtypeNames, ConfigNamesAreCanonical) {
  EXPECT_EQ(canonical_dtype("half"), "float16");
  EXPECT_EQ(canonical_dtype("float32"), "float32");
  EXPECT_EQ(canonical_dtype("quaternion"), std::nullopt);
}

}  // namespace
}  // namespace ootci
