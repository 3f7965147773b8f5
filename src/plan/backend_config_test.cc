#include "plan/backend_config.h"

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
  EXPECT_EQ(r.config->run.isolation, "fork");
  EXPECT_TRUE(r.config->fork_safe);
}

TEST(BackendConfig, IsolationAndForkSafety) {
  std::string path =
      write_config(R"(backend: {name: ref, device_type: privateuseone, fork_safe: false}
test_configs: [c.yaml]
run:
  isolation: spawn
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_EQ(r.errors, Lines{});
  EXPECT_EQ(r.config->run.isolation, "spawn");
  EXPECT_FALSE(r.config->fork_safe);

  path = write_config(R"(backend: {name: ref, device_type: privateuseone, fork_safe: maybe}
test_configs: [c.yaml]
run:
  isolation: thread
)");
  r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].rfind(path + ":1:", 0), 0u) << r.errors[0];
  EXPECT_NE(r.errors[0].find("backend.fork_safe"), std::string::npos) << r.errors[0];
  EXPECT_EQ(r.errors[1],
            path + ":4:14: run.isolation: unknown isolation 'thread' (expected fork or spawn)");
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

TEST(BackendConfig, PythonpathEntriesExpandVariables) {
  // An extension built into a cache folder (examples/openreg) is named by a variable.
  std::string path = write_config(
      "backend:\n"
      "  name: ref\n"
      "  device_type: privateuseone\n"
      "  pythonpath: [\"${EXT_DIR}\", lib]\n"
      "test_configs: [c.yaml]\n");
  BackendConfigResult r =
      load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}, {"EXT_DIR", "/cache/ext"}}));
  ASSERT_TRUE(r.config) << r.errors.front();
  std::string dir = std::filesystem::path(path).parent_path().string();
  EXPECT_EQ(r.config->pythonpath, (Lines{"/cache/ext", dir + "/lib"}));

  r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_EQ(r.errors,
            Lines{path + ":4:16: backend.pythonpath[0]: environment variable EXT_DIR is not set"});
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

TEST(BackendConfig, GateAndReportSections) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
gate:
  pull_request:
    actions: [closed, labeled]
    require_merged: true
    merged_label: Landed
    base_branches: [main, "release/*"]
    release_pin: torch~=2.14.0
    labels: ["ciflow/crcr/{device}"]
    landed_sha: merge_commit
  push:
    refs: ["refs/tags/ciflow/trunk/*"]
  base_head_command: [git, ls-remote, "https://mirror/{repo}.git", "refs/heads/{branch}"]
  nightly:
    command: [curl, -s, https://api.github.com/repos/pytorch/pytorch/commits/nightly]
    sha_pattern: 'source ([0-9a-f]{40})'
report:
  callback_url: https://relay.example/github/callback
  audience: my-relay
  relay: ootci
  max_attempts: 7
  timeout_s: 30
  token_file: secrets/oidc.jwt
  token_command: [mint-token, "{audience}"]
  workflow_name: nightly-ci
  artifact_url: https://example.com/a
)");
  std::string dir = std::filesystem::path(path).parent_path().string();
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_EQ(r.errors, Lines{});
  const GatePolicy& g = r.config->gate;
  EXPECT_EQ(g.pr_actions, (Lines{"closed", "labeled"}));
  EXPECT_TRUE(g.require_merged);
  EXPECT_EQ(g.merged_label, "Landed");
  EXPECT_EQ(g.base_branches, (Lines{"main", "release/*"}));
  EXPECT_EQ(g.release_pin, "torch~=2.14.0");
  EXPECT_EQ(g.labels, Lines{"ciflow/crcr/{device}"});
  EXPECT_EQ(g.landed_sha, "merge_commit");
  EXPECT_EQ(g.push_refs, Lines{"refs/tags/ciflow/trunk/*"});
  EXPECT_EQ(g.base_head_command,
            (Lines{"git", "ls-remote", "https://mirror/{repo}.git", "refs/heads/{branch}"}));
  EXPECT_EQ(g.nightly_command,
            (Lines{"curl", "-s", "https://api.github.com/repos/pytorch/pytorch/commits/nightly"}));
  EXPECT_EQ(g.nightly_sha_pattern, "source ([0-9a-f]{40})");
  const ReportSettings& rep = r.config->report;
  EXPECT_EQ(rep.callback_url, "https://relay.example/github/callback");
  EXPECT_EQ(rep.audience, "my-relay");
  EXPECT_EQ(rep.relay, "ootci");
  EXPECT_EQ(rep.max_attempts, 7);
  EXPECT_EQ(rep.timeout_s, 30);
  EXPECT_EQ(rep.token_file, dir + "/secrets/oidc.jwt");
  EXPECT_EQ(rep.token_command, (Lines{"mint-token", "{audience}"}));
  EXPECT_EQ(rep.workflow_name, "nightly-ci");
  EXPECT_EQ(rep.artifact_url, "https://example.com/a");
}

TEST(BackendConfig, GateAndReportDefaultsWhenAbsent) {
  std::string path = write_config(
      "backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n"
      "gate:\n  pull_request: {}\nreport:\n");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_EQ(r.errors, Lines{});
  const GatePolicy& g = r.config->gate;
  EXPECT_EQ(g.pr_actions, (Lines{"opened", "synchronize", "reopened", "closed"}));
  EXPECT_FALSE(g.require_merged);
  EXPECT_EQ(g.merged_label, "Merged");
  EXPECT_EQ(g.base_branches, Lines{"main"});
  EXPECT_EQ(g.landed_sha, "base_head");
  EXPECT_TRUE(g.push_refs.empty());
  EXPECT_TRUE(g.nightly_command.empty());
  EXPECT_EQ(g.nightly_sha_pattern, R"(\(([0-9a-f]{40})\))");
  EXPECT_EQ(r.config->report.relay, "crcr");
  EXPECT_EQ(r.config->report.max_attempts, 5);
  EXPECT_EQ(r.config->report.audience, "pytorch-cross-repo-ci-relay");
  EXPECT_EQ(r.config->report.token_file, "");
}

TEST(BackendConfig, GateErrorsNamePositionAndPath) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
gate:
  pull_request:
    actions: [opened, merged]
    require_merged: maybe
    release_pin: torch-nightly
    landed_sha: tip
    base_branch: [main]
  push: {refs: refs/heads/main}
  nightly:
    sha_pattern: '[0-9a-f]{40}'
  base_head_command: git ls-remote
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.errors,
            (Lines{
                path + ":5:23: gate.pull_request.actions[1]: unknown action 'merged' (expected "
                       "opened, synchronize, reopened, closed, labeled, unlabeled, edited or "
                       "ready_for_review)",
                path + ":6:21: gate.pull_request.require_merged: expected true or false",
                path + ":7:18: gate.pull_request.release_pin: no MAJOR.MINOR version in "
                       "'torch-nightly' (for example torch~=2.14.0)",
                path + ":8:17: gate.pull_request.landed_sha: unknown landed_sha 'tip' (expected "
                       "head, merge_commit or base_head)",
                path + ":9:5: gate.pull_request.base_branch: unknown key",
                path + ":10:16: gate.push.refs: expected a list of strings",
                path + ":13:22: gate.base_head_command: expected a list of strings",
                path + ":12:18: gate.nightly.sha_pattern: the pattern needs a group, (...), "
                       "around the SHA",
            }));
}

TEST(BackendConfig, GateRejectsAnInvalidRegex) {
  std::string path = write_config(
      "backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n"
      "gate: {nightly: {sha_pattern: '(['}}\n");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(
      r.errors[0].rfind(path + ":3:31: gate.nightly.sha_pattern: invalid regular expression: ", 0),
      0u)
      << r.errors[0];
}

TEST(BackendConfig, ReportErrorsNamePositionAndPath) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
report:
  callback_url: relay.example/github/callback
  relay: pytorch
  max_attempts: 21
  timeout_s: soon
  token_command: mint
  retries: 3
gate: [pull_request]
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.errors,
            (Lines{
                path + ":10:7: gate: expected a mapping",
                path + ":4:17: report.callback_url: expected an http:// or https:// URL, not "
                       "'relay.example/github/callback'",
                path + ":5:10: report.relay: unknown relay 'pytorch' (expected ootci or crcr)",
                path + ":6:17: report.max_attempts: must be between 1 and 20",
                path + ":7:14: report.timeout_s: expected an integer",
                path + ":8:18: report.token_command: expected a list of strings",
                path + ":9:3: report.retries: unknown key",
            }));
}

TEST(BackendConfig, SelectSection) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
select:
  agent_command: [python3, agent.py, --strict]
  agent_timeout_s: 60
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_TRUE(r.config) << r.errors[0];
  EXPECT_EQ(r.config->select.agent_command, (Lines{"python3", "agent.py", "--strict"}));
  EXPECT_EQ(r.config->select.agent_timeout_s, 60);

  path = write_config("backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n");
  r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_TRUE(r.config) << r.errors[0];
  EXPECT_TRUE(r.config->select.agent_command.empty());
  EXPECT_EQ(r.config->select.agent_timeout_s, 300);
}

TEST(BackendConfig, SelectErrorsNamePositionAndPath) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
select:
  agent_command: []
  agent_timeout_s: 0
  agent: claude
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.errors,
            (Lines{
                path + ":4:18: select.agent_command: expected a non-empty list (the command and "
                       "its arguments)",
                path + ":5:20: select.agent_timeout_s: must be between 1 and 86400",
                path + ":6:3: select.agent: unknown key",
            }));
}

TEST(BackendConfig, SelectTolerance) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
select:
  tolerance:
    factor: 2.5
    reference:
      float32: float16
      half: {atol: 1e-4, rtol: 2e-3}
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_TRUE(r.config) << r.errors[0];
  const ToleranceSettings& t = r.config->select.tolerance;
  EXPECT_DOUBLE_EQ(t.factor, 2.5);
  ASSERT_EQ(t.reference.size(), 2u);
  EXPECT_EQ(t.reference.at("float32").dtype, "float16");
  EXPECT_EQ(t.reference.at("float16").dtype, "");  // "half" is float16
  EXPECT_DOUBLE_EQ(*t.reference.at("float16").atol, 1e-4);
  EXPECT_DOUBLE_EQ(*t.reference.at("float16").rtol, 2e-3);

  path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
select:
  tolerance:
    factor: 0
    reference:
      int64: float32
      float32: float8
      float64: {atol: 1e-7}
      bfloat16: {atol: -1, rtol: 0}
      complex64: [1, 2]
    margin: 2
)");
  r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.errors,
            (Lines{
                path + ":5:13: select.tolerance.factor: expected a number above 0",
                path + ":7:14: select.tolerance.reference.int64: unknown floating dtype 'int64' "
                       "(expected one of float16, bfloat16, float32, float64, complex32, "
                       "complex64 or complex128)",
                path + ":8:16: select.tolerance.reference.float32: unknown floating dtype "
                       "'float8' (expected one of float16, bfloat16, float32, float64, "
                       "complex32, complex64 or complex128, or {atol, rtol})",
                path + ":9:16: select.tolerance.reference.float64: missing required key 'rtol'",
                path + ":10:24: select.tolerance.reference.bfloat16.atol: expected a number of "
                       "at least 0",
                path + ":10:34: select.tolerance.reference.bfloat16.rtol: expected a number "
                       "above 0 (the factor multiplies it)",
                path + ":11:18: select.tolerance.reference.complex64: expected a dtype name or a "
                       "mapping {atol, rtol}",
                path + ":12:5: select.tolerance.margin: unknown key",
            }));
}

TEST(BackendConfig, AttributeSection) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
attribute:
  reruns: 5
  probe_reruns: 0
  max_probes: 9
  targets:
    backend:
      repo: src
      build: [make, -C, "${BUILD_DIR}"]
    tests:
      repo: ${UP}
    core:
      repo: /core
      revision: [git, -C, /core, rev-parse, HEAD]
      prepare: [sh, prep.sh, "{rev}", "{dir}"]
)");
  std::string dir = std::filesystem::path(path).parent_path().string();
  BackendConfigResult r = load_backend_config(
      path, fake_env({{"TORCH_ROOT", "/t"}, {"UP", "/up"}, {"BUILD_DIR", "b"}}));
  ASSERT_TRUE(r.config) << r.errors[0];
  const AttributeSettings& a = r.config->attribute;
  EXPECT_EQ(a.reruns, 5);
  EXPECT_EQ(a.probe_reruns, 0);
  EXPECT_EQ(a.max_probes, 9);
  EXPECT_EQ(a.backend_repo, dir + "/src");
  EXPECT_EQ(a.backend_build, (Lines{"make", "-C", "b"}));
  EXPECT_EQ(a.tests_repo, "/up");
  EXPECT_EQ(a.core_repo, "/core");
  EXPECT_EQ(a.core_revision, (Lines{"git", "-C", "/core", "rev-parse", "HEAD"}));
  // {rev} and {dir} are left for each call.
  EXPECT_EQ(a.core_prepare, (Lines{"sh", "prep.sh", "{rev}", "{dir}"}));

  // Without the section the repos default to the device and torch roots.
  path = write_config("backend: {name: ref, device_type: privateuseone}\ntest_configs: [c.yaml]\n");
  r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  ASSERT_TRUE(r.config) << r.errors[0];
  EXPECT_EQ(r.config->attribute.backend_repo, r.config->device_root);
  EXPECT_EQ(r.config->attribute.tests_repo, "/t");
  EXPECT_EQ(r.config->attribute.reruns, 3);
  EXPECT_TRUE(r.config->attribute.core_prepare.empty());
}

TEST(BackendConfig, AttributeErrorsNamePositionAndPath) {
  std::string path = write_config(R"(backend: {name: ref, device_type: privateuseone}
test_configs: [c.yaml]
attribute:
  reruns: 0
  targets:
    backend:
      build: []
    core:
      prepare: [sh, "${NOPE}"]
      wheel: x
)");
  BackendConfigResult r = load_backend_config(path, fake_env({{"TORCH_ROOT", "/t"}}));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.errors, (Lines{
                          path + ":4:11: attribute.reruns: must be between 1 and 20",
                          path + ":7:14: attribute.targets.backend.build: expected a non-empty "
                                 "list (the command and its arguments)",
                          path + ":9:21: attribute.targets.core.prepare[1]: environment variable "
                                 "NOPE is not set",
                          path + ":10:7: attribute.targets.core.wheel: unknown key",
                      }));
}

TEST(BackendConfig, UnreadableFile) {
  BackendConfigResult r = load_backend_config("/nonexistent/ootci.yaml", fake_env({}));
  EXPECT_EQ(r.errors, Lines{"/nonexistent/ootci.yaml: cannot open file"});
}

}  // namespace
}  // namespace ootci

namespace ootci {
namespace {

TEST(BackendConfig, TestConfigSetsByTorchVersion) {
  std::string path = write_config(
      "backend: {name: ref, device_type: privateuseone}\n"
      "upstream: {torch_root: /t}\n"
      "test_configs:\n"
      "  by_torch:\n"
      "    \"1.13\": [configs/*.yaml]\n"
      "    \"2.6\": [configs/torch-2.6/*.yaml, /abs/x.yaml]\n");
  BackendConfigResult r = load_backend_config(path, fake_env({}));
  ASSERT_TRUE(r.config) << r.errors.front();
  std::string dir = std::filesystem::path(path).parent_path().string();
  EXPECT_TRUE(r.config->test_configs.empty());
  ASSERT_EQ(r.config->test_config_sets.size(), 2u);
  EXPECT_EQ(r.config->test_config_sets.at("1.13").patterns, Lines{dir + "/configs/*.yaml"});
  EXPECT_EQ(r.config->test_config_sets.at("2.6").patterns,
            (Lines{dir + "/configs/torch-2.6/*.yaml", "/abs/x.yaml"}));
  EXPECT_EQ(r.config->test_config_sets.at("2.6").where[1], path + ":6:39");
  EXPECT_EQ(r.config->test_config_sets_where, path + ":5:5");
}

TEST(BackendConfig, TestConfigSetErrorsNamePositionAndPath) {
  std::string path = write_config(
      "backend: {name: ref, device_type: privateuseone}\n"
      "upstream: {torch_root: /t}\n"
      "test_configs:\n"
      "  by_torch:\n"
      "    latest: [a.yaml]\n"
      "    \"2.6\": b.yaml\n"
      "    \"1.13\": [[c.yaml]]\n");
  BackendConfigResult r = load_backend_config(path, fake_env({}));
  EXPECT_EQ(r.errors,
            (Lines{path + ":5:5: test_configs.by_torch.latest: expected a torch version "
                          "MAJOR.MINOR, such as 2.6",
                   path + ":6:12: test_configs.by_torch.2.6: expected a list of config paths",
                   path + ":7:14: test_configs.by_torch.1.13[0]: expected a string"}));
  path = write_config(
      "backend: {name: ref, device_type: privateuseone}\n"
      "upstream: {torch_root: /t}\n"
      "test_configs: {newest: [a.yaml]}\n");
  r = load_backend_config(path, fake_env({}));
  EXPECT_EQ(r.errors, Lines{path + ":3:15: test_configs: expected a list, or a mapping with one "
                                   "key, by_torch"});
}

TEST(BackendConfig, RootMustHoldThePython) {
  std::string root = std::filesystem::canonical(make_temp_dir()).string();
  std::string path =
      write_config("backend: {name: ref, device_type: privateuseone, root: " + root +
                   ", root_binds: [data]}\nupstream: {torch_root: /t}\ntest_configs: [c.yaml]\n");
  BackendConfigResult r = load_backend_config(path, fake_env({}));
  EXPECT_EQ(r.errors, Lines{path +
                            ":1:56: backend.root: backend.python /usr/bin/python3 is not "
                            "in the root " +
                            root + " (no " + root + "/usr/bin/python3)"});
  std::filesystem::create_directories(root + "/usr/bin");
  write_file(root + "/usr/bin/python3", "");
  r = load_backend_config(path, fake_env({}));
  ASSERT_TRUE(r.config) << r.errors.front();
  EXPECT_EQ(r.config->root, root);
  std::string dir = std::filesystem::path(path).parent_path().string();
  EXPECT_EQ(r.config->root_binds, Lines{dir + "/data"});

  path = write_config(
      "backend:\n  name: ref\n  device_type: privateuseone\n  root: ${BEDS}/none\n"
      "upstream: {torch_root: /t}\ntest_configs: [c.yaml]\n");
  r = load_backend_config(path, fake_env({{"BEDS", "/no/such"}}));
  EXPECT_EQ(r.errors,
            Lines{path + ":4:9: backend.root: the root folder /no/such/none does not exist"});
  path = write_config(
      "backend: {name: ref, device_type: privateuseone, root_binds: [x]}\n"
      "upstream: {torch_root: /t}\ntest_configs: [c.yaml]\n");
  r = load_backend_config(path, fake_env({}));
  EXPECT_EQ(r.errors, Lines{path + ":1:62: backend.root_binds: root_binds needs backend.root"});
}

}  // namespace
}  // namespace ootci
