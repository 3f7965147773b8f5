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

TEST(FileText, TailIsTheLastBytesOrTheWholeFile) {
  std::string path = testing::TempDir() + "/ootci-file-tail";
  std::ofstream(path, std::ios::binary) << "0123456789";
  EXPECT_EQ(read_file_tail(path, 4), "6789");
  EXPECT_EQ(read_file_tail(path, 100), "0123456789");
  EXPECT_EQ(read_file_tail(path + ".missing", 4), "");
}

}  // namespace
}  // namespace ootci
