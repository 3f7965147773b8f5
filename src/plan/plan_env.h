#pragma once
// The environment pytest runs in under a plan: upstream's device-type test machinery loads
// python/ootci_torch, which reads the plan named by OOTCI_PLAN.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "plan/backend_config.h"

namespace ootci {

// The folder holding ootci_torch/ and shims/: $OOTCI_PYTHON_DIR if set; else, for an installed
// <prefix>/bin/ootci (the running executable, /proc/self/exe), <prefix>/share/ootci/python if it
// exists; else the source tree's python/ folder (fixed at build time), for a build tree.
std::string ootci_python_dir();

// ootci_python_dir()'s choice from its inputs: `env_dir` ("" when unset), the executable's path
// ("" when unknown), a directory test and the built-in folder.
std::string choose_python_dir(const std::string& env_dir, const std::string& exe,
                              const std::function<bool(const std::string&)>& is_dir,
                              const std::string& built_in);

// TORCH_TEST_DEVICES, PYTORCH_TESTING_DEVICE_ONLY_FOR, OOTCI_PLAN, PYTEST_PLUGINS, TORCH_ROOT,
// TORCH_DEVICE_ROOT and PYTHONPATH (python_dir, the backend's folders, python_dir/shims, then
// `inherited_pythonpath`), plus every backend.env entry, which wins over the above.
std::map<std::string, std::string> plan_environment(
    const BackendConfig& backend, const std::string& plan_path, const std::string& python_dir,
    const std::optional<std::string>& inherited_pythonpath);

}  // namespace ootci
