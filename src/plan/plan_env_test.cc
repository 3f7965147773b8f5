#include "plan/plan_env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "testing/test_env.h"

namespace ootci {
namespace {

BackendConfig reference_backend() {
  BackendConfig b;
  b.name = "reference";
  b.device_type = "privateuseone";
  b.pythonpath = {"/be", "/be/lib"};
  b.torch_root = "/torch";
  b.device_root = "/be";
  b.env = {{"OOTCI_REF_DISABLED_OPS", "gcd"}};
  return b;
}

TEST(PlanEnv, EverythingPytestNeeds) {
  auto env = plan_environment(reference_backend(), "/ws/plan.json", "/src/python", std::nullopt);
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"OOTCI_PLAN", "/ws/plan.json"},
                     {"OOTCI_REF_DISABLED_OPS", "gcd"},
                     {"PYTEST_PLUGINS", "ootci_torch.pytest_plugin"},
                     {"PYTHONPATH", "/src/python:/be:/be/lib:/src/python/shims"},
                     {"PYTORCH_TESTING_DEVICE_ONLY_FOR", "privateuseone"},
                     {"TORCH_DEVICE_ROOT", "/be"},
                     {"TORCH_ROOT", "/torch"},
                     {"TORCH_TEST_DEVICES", "/src/python/ootci_torch/device_base.py"},
                 }));
}

TEST(PlanEnv, KeepsTheCallersPythonPathLastAndMakesThePlanPathAbsolute) {
  auto env = plan_environment(reference_backend(), "ws/../plan.json", "/p", "/site:/more");
  EXPECT_EQ(env["PYTHONPATH"], "/p:/be:/be/lib:/p/shims:/site:/more");
  EXPECT_EQ(env["OOTCI_PLAN"].front(), '/');
  EXPECT_EQ(env["OOTCI_PLAN"].find(".."), std::string::npos);
}

TEST(PlanEnv, BackendEnvWins) {
  BackendConfig b = reference_backend();
  b.env["PYTEST_PLUGINS"] = "mine";
  EXPECT_EQ(plan_environment(b, "/p.json", "/p", std::nullopt)["PYTEST_PLUGINS"], "mine");
}

TEST(PlanEnv, PythonDirFromTheEnvironmentOrTheSourceTree) {
  setenv("OOTCI_PYTHON_DIR", "/elsewhere/python", 1);
  EXPECT_EQ(ootci_python_dir(), "/elsewhere/python");
  unsetenv("OOTCI_PYTHON_DIR");
  // This test binary sits in the build tree, which has no share/ootci/python above it.
  std::string built_in = ootci_python_dir();
  EXPECT_EQ(built_in.substr(built_in.size() - 7), "/python");
}

TEST(PlanEnv, PythonDirPrefersTheEnvironmentThenTheInstalledLayoutThenTheSourceTree) {
  std::set<std::string> dirs = {"/usr/share/ootci/python", "/opt/o/share/ootci/python"};
  auto is_dir = [&](const std::string& d) { return dirs.count(d) > 0; };
  EXPECT_EQ(choose_python_dir("/mine", "/usr/bin/ootci", is_dir, "/src/python"), "/mine");
  EXPECT_EQ(choose_python_dir("", "/usr/bin/ootci", is_dir, "/src/python"),
            "/usr/share/ootci/python");
  EXPECT_EQ(choose_python_dir("", "/opt/o/bin/ootci", is_dir, "/src/python"),
            "/opt/o/share/ootci/python");
  // A build tree (build/ootci), a prefix without the package's files, an unknown executable.
  EXPECT_EQ(choose_python_dir("", "/src/build/ootci", is_dir, "/src/python"), "/src/python");
  EXPECT_EQ(choose_python_dir("", "/usr/local/bin/ootci", is_dir, "/src/python"), "/src/python");
  EXPECT_EQ(choose_python_dir("", "", is_dir, "/src/python"), "/src/python");
}

TEST(PlanEnv, PythonDirOfAnUnpackedPackageOnDisk) {
  namespace fs = std::filesystem;
  std::string root = make_temp_dir();
  fs::create_directories(root + "/usr/bin");
  auto real_dir = [](const std::string& d) { return fs::is_directory(d); };
  EXPECT_EQ(choose_python_dir("", root + "/usr/bin/ootci", real_dir, "/src/python"), "/src/python");
  fs::create_directories(root + "/usr/share/ootci/python");
  EXPECT_EQ(choose_python_dir("", root + "/usr/bin/ootci", real_dir, "/src/python"),
            root + "/usr/share/ootci/python");
}

}  // namespace
}  // namespace ootci
