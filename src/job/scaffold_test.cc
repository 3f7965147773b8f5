#include "job/scaffold.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "base/error.h"
#include "plan/backend_config.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

namespace fs = std::filesystem;
using Paths = std::vector<std::string>;

const Paths kAllPaths = {".github/actions/setup-ootci/action.yml",
                         ".github/workflows/ootci-discovery.yml",
                         ".github/workflows/ootci.yml",
                         "README.ootci.md",
                         "configs/test_view_ops.yaml",
                         "ootci.yaml"};

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

// Every ${{ in a scalar is closed in the same scalar. A plain scalar is cut at " #" (a YAML
// comment), which once left the workflow's run-name ending in `format('PR` and GitHub refused
// the file.
void expect_whole_expressions(const YAML::Node& node, const std::string& where) {
  if (node.IsScalar()) {
    std::string text = node.as<std::string>();
    for (size_t at = text.find("${{"); at != std::string::npos; at = text.find("${{", at + 3))
      EXPECT_NE(text.find("}}", at), std::string::npos) << where << ": " << text;
  } else if (node.IsMap()) {
    for (const auto& kv : node)
      expect_whole_expressions(kv.second, where + "." + kv.first.as<std::string>());
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      expect_whole_expressions(node[i], where + "[" + std::to_string(i) + "]");
  }
}

// The .deb's and the source build's fields; the pip ones stay empty.
OotciSource source(const std::string& deb_url, const std::string& deb_sha256,
                   const std::string& repository, const std::string& ref) {
  return {.deb_url = deb_url, .deb_sha256 = deb_sha256, .repository = repository, .ref = ref};
}

const OotciSource kDeb =
    source("https://example.com/r/ootci_1.2.3_amd64.deb?X-Sig=a%2Fb&x=1#@DEVICE@",
           "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789", "", "");

TEST(Scaffold, EveryGeneratedYamlParsesWithWholeExpressions) {
  for (const OotciSource& source : {OotciSource{}, kDeb}) {
    for (const auto& [path, content] : scaffold_files("foo", source)) {
      if (!path.ends_with(".yml") && !path.ends_with(".yaml")) continue;
      YAML::Node doc;
      EXPECT_NO_THROW(doc = YAML::Load(content)) << path;
      EXPECT_TRUE(doc.IsMap()) << path;
      expect_whole_expressions(doc, path);
    }
  }
  YAML::Node wf = YAML::Load(scaffold_files("foo").at(".github/workflows/ootci.yml"));
  std::string run_name = wf["run-name"].as<std::string>();
  EXPECT_NE(run_name.find("format('PR #{0} ({1})', "), std::string::npos) << run_name;
  EXPECT_TRUE(run_name.ends_with("|| inputs.pytorch_sha || '' }}")) << run_name;
}

YAML::Node action_inputs(const std::map<std::string, std::string>& files) {
  return YAML::Load(files.at(".github/actions/setup-ootci/action.yml"))["inputs"];
}

TEST(Scaffold, SetupActionInstallsTheGivenDebOrBuildsTheGivenSource) {
  const Paths inputs = {"ootci-wheel",      "ootci-wheel-sha256", "ootci-version",
                        "ootci-index-url",  "ootci-deb-url",      "ootci-deb-sha256",
                        "ootci-repository", "ootci-ref"};
  YAML::Node none = action_inputs(scaffold_files("foo"));
  for (const auto& name : inputs) EXPECT_EQ(none[name]["default"].as<std::string>(), "") << name;
  EXPECT_NE(scaffold_files("foo").at("README.ootci.md").find("**nothing yet**"), std::string::npos);

  // The URL word for word (no placeholder inside it is filled in), the SHA-256 in lowercase.
  auto deb_files = scaffold_files("foo", kDeb);
  YAML::Node deb = action_inputs(deb_files);
  EXPECT_EQ(deb["ootci-deb-url"]["default"].as<std::string>(), kDeb.deb_url);
  EXPECT_EQ(deb["ootci-deb-sha256"]["default"].as<std::string>(),
            "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  EXPECT_EQ(deb["ootci-repository"]["default"].as<std::string>(), "");
  EXPECT_NE(deb_files.at("README.ootci.md").find("the Debian package at <" + kDeb.deb_url + ">"),
            std::string::npos);
  // Only the action changes.
  for (const auto& [path, content] : deb_files) {
    if (path != ".github/actions/setup-ootci/action.yml" && path != "README.ootci.md") {
      EXPECT_EQ(content, scaffold_files("foo").at(path)) << path;
    }
  }

  YAML::Node src = action_inputs(
      scaffold_files("foo", source("", "", "git@github.com:acme/ootci.git", "release/1.2")));
  EXPECT_EQ(src["ootci-repository"]["default"].as<std::string>(), "git@github.com:acme/ootci.git");
  EXPECT_EQ(src["ootci-ref"]["default"].as<std::string>(), "release/1.2");
  EXPECT_EQ(src["ootci-deb-url"]["default"].as<std::string>(), "");
}

TEST(Scaffold, RejectsSourcesThatCannotGoIntoTheAction) {
  const std::string sha(64, 'a');
  EXPECT_NO_THROW(validate_ootci_source({}));
  EXPECT_NO_THROW(validate_ootci_source(source("http://h/ootci_1_amd64.deb", sha, "", "")));
  EXPECT_NO_THROW(validate_ootci_source(source("", "", "https://github.com/acme/ootci", "v1.2.3")));
  struct Bad {
    OotciSource source;
    std::string error;
  };
  for (const Bad& bad : std::vector<Bad>{
           {source("https://h/x.deb", "", "", ""),
            "--ootci-deb-url and --ootci-deb-sha256 go together"},
           {source("", sha, "", ""), "--ootci-deb-url and --ootci-deb-sha256 go together"},
           {source("ftp://h/x.deb", sha, "", ""),
            "--ootci-deb-url 'ftp://h/x.deb': expected an http(s)"},
           {{"https://h/${{ github.token }}", sha, "", ""}, "--ootci-deb-url 'https://h/${{"},
           {source("https://h/a b.deb", sha, "", ""), "--ootci-deb-url 'https://h/a b.deb'"},
           {source("https://h/a\"b.deb", sha, "", ""), "--ootci-deb-url 'https://h/a\"b.deb'"},
           {source("https://h/x.deb", sha + "0", "", ""), "--ootci-deb-sha256 '" + sha + "0'"},
           {source("https://h/x.deb", std::string(63, 'a') + "g", "", ""),
            "expected 64 hex digits"},
           {source("", "", "-uhttps://h/r", ""), "--ootci-repository '-uhttps://h/r'"},
           {source("", "", "https://h/r", "main;x"), "--ootci-ref 'main;x'"},
           {source("", "", "https://h/r", "-b"), "--ootci-ref '-b'"},
           {source("", "", "", "main"), "--ootci-ref needs --ootci-repository"},
       }) {
    std::string e = error_of([&] { validate_ootci_source(bad.source); });
    EXPECT_NE(e.find(bad.error), std::string::npos) << bad.error << " | " << e;
    EXPECT_THROW(scaffold_files("foo", bad.source), Error) << bad.error;
  }
}

TEST(Scaffold, SetupActionInstallsTheGivenWheelOrVersion) {
  const std::string sha(64, 'B');
  auto files = scaffold_files(
      "foo", {.wheel = "https://h/ootci-1.2.3-py3-none-manylinux_2_34_x86_64.whl?t=1",
              .wheel_sha256 = sha});
  YAML::Node wheel = action_inputs(files);
  EXPECT_EQ(wheel["ootci-wheel"]["default"].as<std::string>(),
            "https://h/ootci-1.2.3-py3-none-manylinux_2_34_x86_64.whl?t=1");
  EXPECT_EQ(wheel["ootci-wheel-sha256"]["default"].as<std::string>(), std::string(64, 'b'));
  EXPECT_NE(files.at("README.ootci.md").find("glibc 2.34 or newer"), std::string::npos);
  YAML::Node index = action_inputs(
      scaffold_files("foo", {.version = "1.2.3", .index_url = "https://pypi.acme.example/simple"}));
  EXPECT_EQ(index["ootci-version"]["default"].as<std::string>(), "1.2.3");
  EXPECT_EQ(index["ootci-index-url"]["default"].as<std::string>(),
            "https://pypi.acme.example/simple");
  EXPECT_EQ(index["ootci-wheel"]["default"].as<std::string>(), "");
}

TEST(Scaffold, RejectsPipSourcesThatCannotGoIntoTheAction) {
  const std::string sha(64, 'a');
  EXPECT_NO_THROW(validate_ootci_source({.wheel = "dist/ootci-1-py3-none-any.whl"}));
  EXPECT_NO_THROW(validate_ootci_source({.version = "1.2.3rc1+local"}));
  struct Bad {
    OotciSource source;
    std::string error;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{.wheel = "https://h/o.whl"}, "--ootci-wheel-sha256 goes with a wheel's URL"},
           {{.wheel = "o.whl", .wheel_sha256 = sha}, "--ootci-wheel-sha256 goes with"},
           {{.wheel = "https://h/o.whl", .wheel_sha256 = "x"}, "--ootci-wheel-sha256 'x'"},
           {{.wheel = "https://h/${{ x }}.whl", .wheel_sha256 = sha}, "--ootci-wheel 'https://h/$"},
           {{.wheel = "/abs/o.whl"}, "a path relative to the repository"},
           {{.wheel = "dist/o b.whl"}, "--ootci-wheel 'dist/o b.whl'"},
           {{.wheel = "dist/o.tar.gz"}, "expected a .whl file"},
           {{.wheel = "o.whl", .version = "1"}, "choose one"},
           {{.version = "v1"}, "--ootci-version 'v1'"},
           {{.version = "1;x"}, "--ootci-version '1;x'"},
           {{.index_url = "https://h/simple"}, "--ootci-index-url needs --ootci-version"},
           {{.version = "1", .index_url = "file:///x"}, "--ootci-index-url 'file:///x'"},
       }) {
    std::string e = error_of([&] { validate_ootci_source(bad.source); });
    EXPECT_NE(e.find(bad.error), std::string::npos) << bad.error << " | " << e;
  }
}

}  // namespace
}  // namespace ootci
