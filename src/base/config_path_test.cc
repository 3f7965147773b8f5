#include "base/config_path.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(ConfigPath, RelativeJoinsTheConfigsFolderAbsoluteAndUrlsStay) {
  EXPECT_EQ(path_in_config_dir("/etc/ootci", "relay.db"), "/etc/ootci/relay.db");
  EXPECT_EQ(path_in_config_dir("/etc/ootci", "../x/./y/"), "/etc/x/y");
  EXPECT_EQ(path_in_config_dir("/etc/ootci", "/var/lib/a"), "/var/lib/a");
  EXPECT_EQ(path_in_config_dir("/etc/ootci", "."), "/etc/ootci");
  EXPECT_EQ(path_in_config_dir("", "a/b"), "a/b");  // a config named without a folder
  EXPECT_EQ(path_in_config_dir("/etc", "https://example.com/a.yaml"), "https://example.com/a.yaml");
  EXPECT_EQ(path_in_config_dir("/etc", ""), "");
}

}  // namespace
}  // namespace ootci
