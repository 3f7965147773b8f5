// `ootci --version`: the version from CMakeLists.txt, the git revision and the build type.
#include <gtest/gtest.h>

#include <regex>

#include "testing/ootci_cli.h"

namespace ootci {
namespace {

TEST(VersionCli, PrintsTheVersionTheRevisionAndTheBuildType) {
  CliRun r = run_ootci({"--version"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string prefix = std::string("ootci ") + OOTCI_VERSION + " (git ";
  std::string suffix = std::string(", ") + OOTCI_BUILD_TYPE + ")\n";
  ASSERT_EQ(r.out.substr(0, prefix.size()), prefix) << r.out;
  ASSERT_GE(r.out.size(), prefix.size() + suffix.size()) << r.out;
  ASSERT_EQ(r.out.substr(r.out.size() - suffix.size()), suffix) << r.out;
  std::string revision = r.out.substr(prefix.size(), r.out.size() - prefix.size() - suffix.size());
  EXPECT_TRUE(std::regex_match(revision, std::regex("[0-9a-f]{12}(-dirty)?|unknown"))) << revision;
}

}  // namespace
}  // namespace ootci
