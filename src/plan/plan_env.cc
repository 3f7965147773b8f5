#include "plan/plan_env.h"

#include <cstdlib>
#include <filesystem>

namespace ootci {

std::string choose_python_dir(const std::string& env_dir, const std::string& exe,
                              const std::function<bool(const std::string&)>& is_dir,
                              const std::string& built_in) {
  if (!env_dir.empty()) return env_dir;
  if (!exe.empty()) {
    std::string installed =
        (std::filesystem::path(exe).parent_path().parent_path() / "share/ootci/python").string();
    if (is_dir(installed)) return installed;
  }
  return built_in;
}

std::string ootci_python_dir() {
  const char* env_dir = std::getenv("OOTCI_PYTHON_DIR");
  // The kernel's link is already absolute with every symlink resolved, so /usr/local/bin/ootci
  // linking to /opt/ootci/bin/ootci finds /opt/ootci/share.
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  auto is_dir = [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
  };
  return choose_python_dir(env_dir ? env_dir : "", ec ? "" : exe, is_dir, OOTCI_PYTHON_DIR);
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
