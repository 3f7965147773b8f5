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

TEST(TruncateUtf8Chars, CountsCodePointsNotBytes) {
  bool cut = true;
  EXPECT_EQ(truncate_utf8_chars("abc", 3, &cut), "abc");
  EXPECT_FALSE(cut);
  EXPECT_EQ(truncate_utf8_chars("L1 \u2013 x", 4, &cut), "L1 \u2013");  // a 3-byte dash is one
  EXPECT_TRUE(cut);
  EXPECT_EQ(truncate_utf8_chars("\u00e9\u00e9\u00e9", 2), "\u00e9\u00e9");
  EXPECT_EQ(truncate_utf8_chars("", 0, &cut), "");
  EXPECT_FALSE(cut);
}

}  // namespace
}  // namespace ootci
