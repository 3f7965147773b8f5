#include "select/git.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace ootci {
namespace {

TEST(UnifiedDiff, HunksAddedRemovedBinaryAndQuotedPaths) {
  auto files = parse_unified_diff(
      "diff --git a/csrc/k.cpp b/csrc/k.cpp\n"
      "index 1..2 100644\n"
      "--- a/csrc/k.cpp\n"
      "+++ b/csrc/k.cpp\n"
      "@@ -5 +5,2 @@ at::Tensor f() {\n"
      "-old\n"
      "+new\n"
      "+newer\n"
      "@@ -10,3 +11,0 @@\n"
      "-a\n-b\n-c\n"
      "diff --git a/new.h b/new.h\n"
      "new file mode 100644\n"
      "index 0000000..e69de29\n"
      "diff --git a/gone.py b/gone.py\n"
      "deleted file mode 100644\n"
      "--- a/gone.py\n"
      "+++ /dev/null\n"
      "@@ -1,2 +0,0 @@\n"
      "-x\n-y\n"
      "diff --git a/img.png b/img.png\n"
      "Binary files a/img.png and b/img.png differ\n"
      "diff --git \"a/sp\\303\\244ce.cpp\" \"b/sp\\303\\244ce.cpp\"\n"
      "--- \"a/sp\\303\\244ce.cpp\"\n"
      "+++ \"b/sp\\303\\244ce.cpp\"\n"
      "@@ -1 +1 @@\n"
      "-a\n+b\n");
  ASSERT_EQ(files.size(), 5u);
  EXPECT_EQ(files[0].path(), "csrc/k.cpp");
  EXPECT_EQ(files[0].status(), "modified");
  EXPECT_EQ(files[0].removed, (std::vector<std::pair<int, int>>{{5, 5}, {10, 12}}));
  EXPECT_EQ(files[0].added, (std::vector<std::pair<int, int>>{{5, 6}}));
  EXPECT_EQ(files[1].path(), "new.h");
  EXPECT_TRUE(files[1].is_added());  // empty: no ---/+++ lines at all
  EXPECT_TRUE(files[2].is_removed());
  EXPECT_EQ(files[2].path(), "gone.py");
  EXPECT_EQ(files[2].removed, (std::vector<std::pair<int, int>>{{1, 2}}));
  EXPECT_TRUE(files[3].binary);
  EXPECT_EQ(files[4].path(),
            "sp\xc3\xa4"
            "ce.cpp");
}

TEST(RevisionRange, TwoDotsOrOneRevision) {
  EXPECT_EQ(parse_revision_range("a..b", "--backend"),
            std::make_pair(std::string("a"), std::string("b")));
  EXPECT_EQ(parse_revision_range("v1", "--backend"),
            std::make_pair(std::string("v1"), std::string("HEAD")));
  EXPECT_THROW(parse_revision_range("a...b", "--backend"), Error);
  EXPECT_THROW(parse_revision_range("..b", "--upstream"), Error);
}

}  // namespace
}  // namespace ootci
