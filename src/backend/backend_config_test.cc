#include "backend/backend_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_env.h"

namespace ootci {
namespace {

using Lines = std::vector<std::string>;

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// A temp folder holding ootci.yaml with `yaml`; returns the file's path.
std::string write_config(const std::string& yaml) {
  std::string dir = std::filesystem::canonical(make_temp_dir()).string();
  write_file(dir + "/ootci.yaml", yaml);
  return dir + "/ootci.yaml";
}

TEST(BackendConfig, ReadsEveryKeyAndMakesPathsAbsolute) {
  std::string torch = std::filesystem::canonical(make_temp_dir()).string();
  std::string path = write_config(R"(backend:
  name: reference
  device_type: privateuseone
  python: /opt/py/bin/python
  modules: [ootci_reference_backend]
  pythonpath: [., lib]
  env:
    OOTCI_REF_DISABLED_OPS: ""
    MODE: fast
upstream:
  torch_root: ${MY_TORCH}
  device_root: backend
test_configs:
  - configs/*.yaml
  - /abs/extra.yaml
workspace: out
)");
  std::string dir = std::filesystem::path(path).parent_path().string();
  BackendConfigResult r = load_backend_config(path, fake_env({{"MY_TORCH", torch}}));
  ASSERT_EQ(r.errors, Lines{});
  const BackendConfig& c = *r.config;
  EXPECT_EQ(c.path, path);
  EXPECT_EQ(c.dir, dir);
  EXPECT_EQ(c.name, "reference");
  EXPECT_EQ(c.device_type, "privateuseone");
  EXPECT_EQ(c.python, "/opt/py/bin/python");
  EXPECT_EQ(c.modules, Lines{"ootci_reference_backend"});
  EXPECT_EQ(c.pythonpath, (Lines{dir, dir + "/lib"}));
  EXPECT_EQ(c.env,
            (std::map<std::string, std::string>{{"MODE", "fast"}, {"OOTCI_REF_DISABLED_OPS", ""}}));
  EXPECT_EQ(c.torch_root, torch);
  EXPECT_EQ(c.device_root, dir + "/backend");
  EXPECT_EQ(c.test_configs, (Lines{dir + "/configs/*.yaml", "/abs/extra.yaml"}));
  EXPECT_EQ(c.test_config_where, (Lines{path + ":14:5", path + ":15:5"}));
  EXPECT_EQ(c.workspace, dir + "/out");
}

TEST(BackendConfig, Defaults) {
  std::string path =
      write_config("backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n");
  std::string dir = std::filesystem::path(path).parent_path().string();
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/opt/torch"}}));
  ASSERT_EQ(r.errors, Lines{});
  EXPECT_EQ(r.config->python, "/usr/bin/python3");
  EXPECT_EQ(r.config->torch_root, "/opt/torch");
  EXPECT_EQ(r.config->device_root, dir);
  EXPECT_EQ(r.config->workspace, dir + "/.ootci");
  EXPECT_TRUE(r.config->modules.empty());
  EXPECT_TRUE(r.config->env.empty());
}

TEST(BackendConfig, TorchRootMustComeFromSomewhere) {
  std::string path =
      write_config("backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n");
  BackendConfigResult r = load_backend_config(path, fake_env({}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(
      r.errors,
      Lines{path + ": upstream.torch_root is not set and TORCH_ROOT is not in the environment"});
}

TEST(BackendConfig, UnsetVariableNamesPositionAndVariable) {
  std::string path = write_config(
      "backend: {name: ref, device_type: privateuseone}\n"
      "upstream:\n"
      "  torch_root: ${NOPE}/torch\n"
      "  device_root: ${HERE}/dev\n"
      "test_configs: [c.yaml]\n");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_EQ(r.errors,
            (Lines{path + ":3:15: upstream.torch_root: environment variable NOPE is not set",
                   path + ":4:16: upstream.device_root: environment variable HERE is not set"}));
}

TEST(BackendConfig, EveryErrorIsReported) {
  std::string path = write_config(
      "backend:\n"
      "  device_type: [x]\n"
      "  modules: one\n"
      "upstream: {torch_root: /t, typo: 1}\n"
      "worksapce: w\n");
  BackendConfigResult r = load_backend_config(path, fake_env({}));
  EXPECT_EQ(r.errors, (Lines{
                          path + ":2:3: backend: missing required key 'name'",
                          path + ":2:16: backend.device_type: expected a string",
                          path + ":3:12: backend.modules: expected a list of strings",
                          path + ":4:28: upstream.typo: unknown key",
                          path + ":1:1: missing required key 'test_configs'",
                          path + ":5:1: worksapce: unknown key",
                      }));
}

TEST(BackendConfig, UnreadableFile) {
  BackendConfigResult r = load_backend_config("/nonexistent/ootci.yaml", fake_env({}));
  EXPECT_EQ(r.errors, Lines{"/nonexistent/ootci.yaml: cannot open file"});
}

}  // namespace
}  // namespace ootci
