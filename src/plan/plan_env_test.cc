#include "plan/plan_env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "base/error.h"
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
  namespace fs = std::filesystem;
  std::string elsewhere = make_temp_dir();
  fs::create_directories(elsewhere + "/ootci_torch");
  setenv("OOTCI_PYTHON_DIR", elsewhere.c_str(), 1);
  EXPECT_EQ(ootci_python_dir(), elsewhere);
  unsetenv("OOTCI_PYTHON_DIR");
  // This test binary sits in the build tree, which has no share/ootci/python above it.
  std::string built_in = ootci_python_dir();
  EXPECT_EQ(built_in.substr(built_in.size() - 7), "/python");
  EXPECT_TRUE(fs::is_directory(built_in + "/ootci_torch"));
}

// A fake file system holding `dirs`, each with an ootci_torch/ inside.
std::function<bool(const std::string&)> python_dirs(std::set<std::string> dirs) {
  for (std::string d : std::set<std::string>(dirs)) dirs.insert(d + "/ootci_torch");
  return [dirs](const std::string& d) { return dirs.count(d) > 0; };
}

TEST(PlanEnv, PythonDirPrefersTheEnvironmentThenTheInstalledLayoutThenTheSourceTree) {
  auto is_dir =
      python_dirs({"/mine", "/usr/share/ootci/python", "/opt/o/share/ootci/python", "/src/python"});
  auto choose = [&](const std::string& env, const std::string& exe) {
    return choose_python_dir(env, exe, is_dir, "/src/python", "/src/build");
  };
  EXPECT_EQ(choose("/mine", "/usr/bin/ootci"), "/mine");
  EXPECT_EQ(choose("", "/usr/bin/ootci"), "/usr/share/ootci/python");
  EXPECT_EQ(choose("", "/opt/o/bin/ootci"), "/opt/o/share/ootci/python");
  // The build tree's binary and test binaries, and an unknown executable.
  EXPECT_EQ(choose("", "/src/build/ootci"), "/src/python");
  EXPECT_EQ(choose("", "/src/build/src/backend/ootci_backend_test"), "/src/python");
  EXPECT_EQ(choose("", ""), "/src/python");
}

TEST(PlanEnv, AMissingPythonPackageNamesTheFolderLookedIn) {
  auto is_dir = python_dirs({"/src/python", "/venv/share/ootci/python"});
  auto error_of = [&](const std::string& env, const std::string& exe) -> std::string {
    try {
      choose_python_dir(env, exe, is_dir, "/src/python", "/src/build");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  // An installed ootci whose share/ootci/python is gone does not fall back to the source tree of
  // the machine it was built on.
  EXPECT_EQ(error_of("", "/usr/local/bin/ootci"),
            "ootci's Python package is missing: no ootci_torch/ in "
            "/usr/local/share/ootci/python (beside /usr/local/bin/ootci); reinstall ootci, or set "
            "OOTCI_PYTHON_DIR to the folder that holds ootci_torch/");
  EXPECT_NE(error_of("/nowhere", "/venv/bin/ootci")
                .find("no ootci_torch/ in /nowhere ($OOTCI_PYTHON_DIR)"),
            std::string::npos);
  // A build tree whose source tree lost python/ says so too.
  auto bare = python_dirs({});
  EXPECT_THROW(choose_python_dir("", "/src/build/ootci", bare, "/src/python", "/src/build"), Error);
  // Only a folder holding ootci_torch/ counts as installed.
  auto share_only = [](const std::string& d) { return d == "/usr/share/ootci/python"; };
  EXPECT_THROW(choose_python_dir("", "/usr/bin/ootci", share_only, "/src/python", "/src/build"),
               Error);
}

TEST(PlanEnv, PythonDirOfAnUnpackedPackageOnDisk) {
  namespace fs = std::filesystem;
  std::string root = make_temp_dir();
  fs::create_directories(root + "/usr/bin");
  auto real_dir = [](const std::string& d) { return fs::is_directory(d); };
  EXPECT_THROW(
      choose_python_dir("", root + "/usr/bin/ootci", real_dir, "/src/python", "/src/build"), Error);
  fs::create_directories(root + "/usr/share/ootci/python/ootci_torch");
  EXPECT_EQ(choose_python_dir("", root + "/usr/bin/ootci", real_dir, "/src/python", "/src/build"),
            root + "/usr/share/ootci/python");
}

}  // namespace
}  // namespace ootci
