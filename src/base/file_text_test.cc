#include "base/file_text.h"

#include <gtest/gtest.h>

#include <fstream>

namespace ootci {
namespace {

TEST(FileText, ReadsBytesAndTellsAMissingFileApart) {
  std::string path = testing::TempDir() + "/ootci-file-text";
  std::ofstream(path, std::ios::binary) << std::string("a\0b\n", 4);
  EXPECT_EQ(read_file_bytes(path), std::string("a\0b\n", 4));
  EXPECT_EQ(read_file_bytes(path + ".missing"), std::nullopt);
  EXPECT_EQ(read_file_or_empty(path + ".missing"), "");
}

}  // namespace
}  // namespace ootci
