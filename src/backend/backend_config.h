#pragma once
// `ootci.yaml`: which backend runs, where upstream PyTorch lives, and which test-suite configs
// apply (schema in docs/plan.md).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ootci {

// How `ootci run` runs the plan (the `run:` section; docs/run.md).
struct RunSettings {
  int workers = 2;            // test files in parallel
  int reruns = 2;             // extra runs of a failed test, each in a fresh process
  int stall_timeout_s = 300;  // no output for this long: kill the process group, retry once
  int test_timeout_s = 900;   // one test running this long is killed and reported as a timeout
  std::vector<std::string> pytest_args;  // appended to every pytest command
};

struct BackendConfig {
  std::string path;  // absolute path of ootci.yaml
  std::string dir;   // its folder: relative paths in it are relative to this
  std::string name;
  std::string device_type;
  std::string python = "/usr/bin/python3";
  std::vector<std::string> modules;
  std::vector<std::string> pythonpath;  // absolute
  std::map<std::string, std::string> env;
  std::string torch_root;   // absolute, ${VAR} expanded
  std::string device_root;  // absolute, ${VAR} expanded
  // test_configs entries made absolute (globs not yet expanded), each with "file:line:col".
  std::vector<std::string> test_configs;
  std::vector<std::string> test_config_where;
  std::string workspace;  // absolute
  RunSettings run;
};

struct BackendConfigResult {
  std::optional<BackendConfig> config;  // set when there are no errors
  std::vector<std::string> errors;      // "file:line:col: yaml.path: message"
};

// Looks an environment variable up; nullopt when it is unset or empty. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env(const std::string& name);

BackendConfigResult load_backend_config(const std::string& path,
                                        EnvLookup environment = process_env);

}  // namespace ootci
