#include "backend/plan_env.h"

#include <cstdlib>
#include <filesystem>

namespace ootci {

std::string ootci_python_dir() {
  const char* dir = std::getenv("OOTCI_PYTHON_DIR");
  if (dir && *dir) return dir;
  return OOTCI_PYTHON_DIR;
}

std::map<std::string, std::string> plan_environment(
    const BackendConfig& backend, const std::string& plan_path, const std::string& python_dir,
    const std::optional<std::string>& inherited_pythonpath) {
  std::string pythonpath = python_dir;
  for (const auto& p : backend.pythonpath) pythonpath += ":" + p;
  // The shims come after the backend's folders so a backend can bring its own versions.
  pythonpath += ":" + python_dir + "/shims";
  if (inherited_pythonpath && !inherited_pythonpath->empty())
    pythonpath += ":" + *inherited_pythonpath;

  std::map<std::string, std::string> env = {
      {"TORCH_TEST_DEVICES", python_dir + "/ootci_torch/device_base.py"},
      {"PYTORCH_TESTING_DEVICE_ONLY_FOR", backend.device_type},
      {"OOTCI_PLAN", std::filesystem::absolute(plan_path).lexically_normal().string()},
      {"PYTEST_PLUGINS", "ootci_torch.pytest_plugin"},
      {"TORCH_ROOT", backend.torch_root},
      {"TORCH_DEVICE_ROOT", backend.device_root},
      {"PYTHONPATH", pythonpath},
  };
  for (const auto& [key, value] : backend.env) env[key] = value;
  return env;
}

}  // namespace ootci
