#include "dispatch/scaffold.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "backend/backend_config.h"
#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

namespace fs = std::filesystem;
using Paths = std::vector<std::string>;

const Paths kAllPaths = {".github/actions/setup-ootci/action.yml", ".github/workflows/ootci.yml",
                         "README.ootci.md", "configs/test_view_ops.yaml", "ootci.yaml"};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Scaffold, DeviceNamesAreLowercaseLettersDigitsUnderscoreAndDash) {
  for (const char* ok : {"foo", "spyre", "my-dev_2", "0"})
    EXPECT_NO_THROW(validate_device_name(ok)) << ok;
  for (const char* bad : {"", "Foo", "a b", "../x", "foo/bar", "dev.1", "caf\xc3\xa9", "x;y"}) {
    std::string e = error_of([&] { validate_device_name(bad); });
    EXPECT_NE(e.find(std::string("invalid device name '") + bad + "'"), std::string::npos)
        << bad << ": " << e;
    EXPECT_THROW(scaffold_files(bad), Error) << bad;
  }
}

TEST(Scaffold, FilesAreTheSameForTheSameDeviceAndNameIt) {
  auto files = scaffold_files("foo");
  EXPECT_EQ(files, scaffold_files("foo"));
  Paths paths;
  for (const auto& [path, content] : files) {
    paths.push_back(path);
    EXPECT_EQ(content.find("@DEVICE@"), std::string::npos) << path;
    EXPECT_EQ(content.find("@MODULE@"), std::string::npos) << path;
    EXPECT_FALSE(content.empty()) << path;
    EXPECT_EQ(content.back(), '\n') << path;
  }
  EXPECT_EQ(paths, kAllPaths);
  const std::string& workflow = files.at(".github/workflows/ootci.yml");
  EXPECT_NE(workflow.find("runs-on: [self-hosted, foo]"), std::string::npos);
  EXPECT_NE(workflow.find("JOB_NAME: \"foo / upstream tests\""), std::string::npos);
  // gate's own {device} placeholder stays for gate to expand.
  EXPECT_NE(files.at("ootci.yaml").find("labels: [\"ciflow/crcr/{device}\"]"), std::string::npos);
  EXPECT_NE(scaffold_files("bar").at(".github/workflows/ootci.yml"), workflow);
}

TEST(Scaffold, GeneratedOotciYamlLoadsWithTheDeviceAndPyTorchsRelay) {
  std::string dir = make_temp_dir();
  auto files = scaffold_files("my-dev");
  write_file(dir + "/ootci.yaml", files.at("ootci.yaml"));
  BackendConfigResult r = load_backend_config(dir + "/ootci.yaml", [](const std::string& name) {
    return name == "TORCH_ROOT" ? std::optional<std::string>("/torch") : std::nullopt;
  });
  ASSERT_TRUE(r.config) << testing::PrintToString(r.errors);
  EXPECT_EQ(r.config->name, "my-dev");
  EXPECT_EQ(r.config->device_type, "my-dev");
  EXPECT_EQ(r.config->modules, Paths{"torch_my_dev"});  // a module name has no '-'
  EXPECT_EQ(r.config->torch_root, "/torch");
  EXPECT_EQ(r.config->test_configs, Paths{dir + "/configs/*.yaml"});
  EXPECT_EQ(r.config->workspace, dir + "/.ootci");
  EXPECT_EQ(r.config->report.callback_url,
            "https://gwuj7w5coh4y4l66urspge6mnm0pwaxq.lambda-url.us-east-1.on.aws/github/"
            "callback/");
  EXPECT_EQ(r.config->report.relay, "crcr");
  EXPECT_EQ(r.config->gate.base_branches, Paths{"main"});  // commented out: the default
  EXPECT_EQ(r.config->gate.labels, Paths{});
  // The schedule's `ootci gate --nightly` needs a command; there is no default.
  ASSERT_EQ(r.config->gate.nightly_command.size(), 3u);
  EXPECT_EQ(r.config->gate.nightly_command[0], "curl");
}

TEST(Scaffold, WritesEveryFileUnderTheFolder) {
  std::string dir = make_temp_dir() + "/repo";
  auto files = scaffold_files("foo");
  EXPECT_EQ(write_scaffold(dir, files, false), kAllPaths);
  for (const auto& [path, content] : files) EXPECT_EQ(read_file(dir + "/" + path), content);
}

TEST(Scaffold, RefusesToOverwriteAndListsEveryFileThatExists) {
  std::string dir = make_temp_dir();
  auto files = scaffold_files("foo");
  write_file(dir + "/ootci.yaml", "mine\n");
  fs::create_directories(dir + "/.github/workflows");
  write_file(dir + "/.github/workflows/ootci.yml", "mine too\n");
  EXPECT_EQ(existing_scaffold_files(dir, files),
            (Paths{".github/workflows/ootci.yml", "ootci.yaml"}));

  std::string e = error_of([&] { write_scaffold(dir, files, false); });
  EXPECT_EQ(e, dir +
                   ": files already exist: .github/workflows/ootci.yml, ootci.yaml (nothing "
                   "written; --force overwrites)");
  // Nothing was written, not even the files that did not exist.
  EXPECT_EQ(read_file(dir + "/ootci.yaml"), "mine\n");
  EXPECT_EQ(read_file(dir + "/.github/workflows/ootci.yml"), "mine too\n");
  EXPECT_FALSE(fs::exists(dir + "/README.ootci.md"));
  EXPECT_FALSE(fs::exists(dir + "/configs"));

  EXPECT_EQ(write_scaffold(dir, files, true), kAllPaths);
  EXPECT_EQ(read_file(dir + "/ootci.yaml"), files.at("ootci.yaml"));
  EXPECT_TRUE(existing_scaffold_files(dir, files).size() == files.size());
}

TEST(Scaffold, OneExistingFileIsNamedInTheSingular) {
  std::string dir = make_temp_dir();
  write_file(dir + "/README.ootci.md", "x");
  EXPECT_EQ(error_of([&] { write_scaffold(dir, scaffold_files("foo"), false); }),
            dir + ": a file already exists: README.ootci.md (nothing written; --force overwrites)");
}

TEST(Scaffold, EveryGeneratedYamlParses) {
  for (const auto& [path, content] : scaffold_files("foo")) {
    if (!path.ends_with(".yml") && !path.ends_with(".yaml")) continue;
    YAML::Node doc;
    EXPECT_NO_THROW(doc = YAML::Load(content)) << path;
    EXPECT_TRUE(doc.IsMap()) << path;
  }
}

}  // namespace
}  // namespace ootci
