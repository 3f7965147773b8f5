#pragma once
// The environment pytest runs in under a plan: upstream's device-type test machinery loads
// python/ootci_torch, which reads the plan named by OOTCI_PLAN.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

// The folder holding ootci_torch/ and shims/: $OOTCI_PYTHON_DIR if set; else, for an installed
// <prefix>/bin/ootci (the running executable, /proc/self/exe: a .deb's /usr, a wheel's venv),
// <prefix>/share/ootci/python; else, for an executable inside the build tree, the source tree's
// python/ folder (both fixed at build time). Throws Error naming the folder it chose and why when
// that folder holds no ootci_torch/.
std::string ootci_python_dir();

// ootci_python_dir()'s choice from its inputs: `env_dir` ("" when unset), the executable's path
// ("" when unknown), a directory test, the built-in folder and the build tree.
std::string choose_python_dir(const std::string& env_dir, const std::string& exe,
                              const std::function<bool(const std::string&)>& is_dir,
                              const std::string& built_in, const std::string& build_tree);

// The argv prefix that starts the backend's Python: {backend.python}, or, with backend.root, the
// same interpreter inside that root through `ootci chroot`, with the workspace, the backend,
// upstream's tests, ootci's Python package (`python_dir`), ootci's cache, /tmp and root_binds
// visible at the same paths.
std::vector<std::string> python_command(const BackendConfig& backend,
                                        const std::string& python_dir);

// ootci's cache folder, as the Python side and scripts/lib find it: $OOTCI_CACHE_DIR, else
// $XDG_CACHE_HOME/ootci, else ~/.cache/ootci.
std::string ootci_cache_dir();

// TORCH_TEST_DEVICES, PYTORCH_TESTING_DEVICE_ONLY_FOR, OOTCI_PLAN, PYTEST_PLUGINS, TORCH_ROOT,
// TORCH_DEVICE_ROOT and PYTHONPATH (python_dir, the backend's folders, python_dir/shims, then
// `inherited_pythonpath`), plus every backend.env entry, which wins over the above.
std::map<std::string, std::string> plan_environment(
    const BackendConfig& backend, const std::string& plan_path, const std::string& python_dir,
    const std::optional<std::string>& inherited_pythonpath);

}  // namespace ootci
