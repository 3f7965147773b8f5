#include "plan/path_glob.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_env.h"

namespace ootci {
namespace {

using Lines = std::vector<std::string>;

class PathGlob : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(make_temp_dir()).string();
    for (const char* d : {"test", "test/nn", "test/nn/deep", "test/.hidden", "other"})
      std::filesystem::create_directories(root_ + "/" + d);
    for (const char* f : {"test/test_a.py", "test/test_b.py", "test/readme.md",
                          "test/nn/test_nn.py", "test/nn/deep/test_deep.py",
                          "test/.hidden/test_h.py", "test/.test_dot.py", "other/test_c.py"})
      write_file(root_ + "/" + f, "");
  }
  Lines glob(const std::string& pattern) {
    Lines out;
    for (const auto& p : expand_glob(root_ + "/" + pattern))
      out.push_back(p.substr(root_.size() + 1));
    return out;
  }
  std::string root_;
};

TEST_F(PathGlob, StarQuestionAndBracketsMatchWithinOneFolder) {
  EXPECT_EQ(glob("test/*.py"), (Lines{"test/test_a.py", "test/test_b.py"}));
  EXPECT_EQ(glob("test/test_?.py"), (Lines{"test/test_a.py", "test/test_b.py"}));
  EXPECT_EQ(glob("test/test_[b-z].py"), (Lines{"test/test_b.py"}));
  EXPECT_EQ(glob("*/test_c.py"), (Lines{"other/test_c.py"}));
}

TEST_F(PathGlob, DoubleStarMatchesAnyNumberOfFoldersIncludingNone) {
  EXPECT_EQ(glob("test/**/test_*.py"), (Lines{"test/nn/deep/test_deep.py", "test/nn/test_nn.py",
                                              "test/test_a.py", "test/test_b.py"}));
  EXPECT_EQ(glob("**/deep/*.py"), (Lines{"test/nn/deep/test_deep.py"}));
}

TEST_F(PathGlob, PlainPathsAndNoMatches) {
  EXPECT_EQ(glob("test/test_a.py"), (Lines{"test/test_a.py"}));
  EXPECT_EQ(glob("test/missing.py"), Lines{});
  EXPECT_EQ(glob("nowhere/**/*.py"), Lines{});
  EXPECT_TRUE(has_glob_chars("a/*.py"));
  EXPECT_TRUE(has_glob_chars("a/[ab].py"));
  EXPECT_FALSE(has_glob_chars("a/b.py"));
}

TEST_F(PathGlob, HiddenNamesNeedAnExplicitDot) {
  EXPECT_EQ(glob("test/.*.py"), (Lines{"test/.test_dot.py"}));
  EXPECT_EQ(glob("test/.hidden/*.py"), (Lines{"test/.hidden/test_h.py"}));
}

}  // namespace
}  // namespace ootci
