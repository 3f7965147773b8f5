#pragma once
// Which Python and torch a backend's interpreter has, asked without importing torch (about a
// second saved): for the run manifest, and for test_configs sets chosen by torch version.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

struct PythonVersions {
  std::string python;  // "3.13.5"; "" when the interpreter did not answer
  std::string torch;   // "2.6.0+debian"; "" when it has no torch
};

PythonVersions probe_python_versions(const BackendConfig& backend);

// "2.6" for "2.6.0+debian", "1.13" for "1.13.1"; "" when `version` is not MAJOR.MINOR[...].
std::string torch_minor(const std::string& version);

// The test_configs of `backend` for torch `version`: its list, or the by_torch set whose key is
// the version's MAJOR.MINOR. An error names ootci.yaml's test_configs and the sets there are.
struct ChosenConfigs {
  std::vector<std::string> patterns, where;
  std::string set;  // the by_torch key chosen; "" for a plain list
  std::optional<std::string> error;
};
ChosenConfigs choose_test_configs(const BackendConfig& backend, const std::string& version);

}  // namespace ootci
