#include "base/utf8.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(TruncateUtf8, NeverCutsACharacterInHalf) {
  EXPECT_EQ(truncate_utf8("héllo", 2), "h");  // é is two bytes
  EXPECT_EQ(truncate_utf8("héllo", 3), "hé");
  EXPECT_EQ(truncate_utf8("a\xF0\x9F\x98\x80z", 4), "a");  // a four-byte emoji
  EXPECT_EQ(truncate_utf8("a\xF0\x9F\x98\x80z", 5), "a\xF0\x9F\x98\x80");
  EXPECT_EQ(truncate_utf8("abc", 10), "abc");
  EXPECT_EQ(truncate_utf8("abc", 0), "");
}

}  // namespace
}  // namespace ootci
