#include "plan/release_pin.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(ReleasePin, FirstMajorMinorOfThePin) {
  EXPECT_EQ(pinned_minor("torch~=2.14.0"), "2.14");
  EXPECT_EQ(pinned_minor("torch==2.9.*"), "2.9");
  EXPECT_EQ(pinned_minor("torch>=2.10,<2.11"), "2.10");
  EXPECT_EQ(pinned_minor("2.14"), "2.14");
  EXPECT_EQ(pinned_minor("torch"), std::nullopt);
  EXPECT_EQ(pinned_minor("torch~=2"), std::nullopt);
}

}  // namespace
}  // namespace ootci
