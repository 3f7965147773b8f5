#include "plan/python_versions.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(TorchMinor, KeepsMajorAndMinorOnly) {
  EXPECT_EQ(torch_minor("2.6.0+debian"), "2.6");
  EXPECT_EQ(torch_minor("1.13.1"), "1.13");
  EXPECT_EQ(torch_minor("2.14"), "2.14");
  EXPECT_EQ(torch_minor("2.15.0a0+git1234"), "2.15");
  EXPECT_EQ(torch_minor(""), "");
  EXPECT_EQ(torch_minor("latest"), "");
  EXPECT_EQ(torch_minor("2"), "");
}

BackendConfig with_sets() {
  BackendConfig b;
  b.python = "/usr/bin/python3";
  b.test_config_sets["1.13"] = {{"/c/*.yaml"}, {"ootci.yaml:5:13"}};
  b.test_config_sets["2.6"] = {{"/c/torch-2.6/*.yaml"}, {"ootci.yaml:6:12"}};
  b.test_config_sets_where = "ootci.yaml:4:5";
  return b;
}

TEST(ChooseTestConfigs, TakesTheSetOfTheTorchMinorVersion) {
  ChosenConfigs c = choose_test_configs(with_sets(), "2.6.0+debian");
  ASSERT_FALSE(c.error);
  EXPECT_EQ(c.set, "2.6");
  EXPECT_EQ(c.patterns, std::vector<std::string>{"/c/torch-2.6/*.yaml"});
  EXPECT_EQ(c.where, std::vector<std::string>{"ootci.yaml:6:12"});
}

TEST(ChooseTestConfigs, APlainListAppliesWhateverTheTorch) {
  BackendConfig b;
  b.test_configs = {"/c/*.yaml"};
  b.test_config_where = {"ootci.yaml:3:5"};
  ChosenConfigs c = choose_test_configs(b, "");
  EXPECT_FALSE(c.error);
  EXPECT_EQ(c.set, "");
  EXPECT_EQ(c.patterns, b.test_configs);
}

TEST(ChooseTestConfigs, NamesTheVersionAndTheSetsThereAre) {
  ChosenConfigs c = choose_test_configs(with_sets(), "2.7.1");
  ASSERT_TRUE(c.error);
  EXPECT_EQ(*c.error,
            "ootci.yaml:4:5: test_configs.by_torch has no set for torch 2.7 (backend.python "
            "/usr/bin/python3 runs torch 2.7.1); its sets: 1.13, 2.6");
  c = choose_test_configs(with_sets(), "");
  ASSERT_TRUE(c.error);
  EXPECT_EQ(*c.error,
            "ootci.yaml:4:5: test_configs.by_torch has no set for torch (none found) "
            "(backend.python /usr/bin/python3 has no torch, or did not answer); its sets: 1.13, "
            "2.6");
}

}  // namespace
}  // namespace ootci
