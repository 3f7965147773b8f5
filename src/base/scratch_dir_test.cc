#include "base/scratch_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace ootci {
namespace {

TEST(ScratchDir, IsCreatedAndRemovedWithItsContents) {
  std::string path;
  {
    ScratchDir dir("unit");
    path = dir.path();
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_NE(path.find("/ootci-unit-"), std::string::npos);
    std::filesystem::create_directories(path + "/a/b");
    std::ofstream(path + "/a/b/f") << "x";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace ootci
