#include "plan/plan_env.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "base/error.h"
#include "base/root_exec.h"

namespace ootci {

std::string choose_python_dir(const std::string& env_dir, const std::string& exe,
                              const std::function<bool(const std::string&)>& is_dir,
                              const std::string& built_in, const std::string& build_tree) {
  std::string dir = built_in, why = "the source tree of the build tree this ootci runs from";
  if (!env_dir.empty()) {
    dir = env_dir;
    why = "$OOTCI_PYTHON_DIR";
  } else if (!exe.empty()) {
    std::string installed =
        (std::filesystem::path(exe).parent_path().parent_path() / "share/ootci/python").string();
    // Outside the build tree, the source tree is no business of this binary's: a wheel or a
    // package copied to another machine would find a checkout there only by accident.
    if (is_dir(installed) || !exe.starts_with(build_tree + "/")) {
      dir = installed;
      why = "beside " + exe;
    }
  }
  if (!is_dir(dir + "/ootci_torch"))
    throw Error(fmt::format(
        "ootci's Python package is missing: no ootci_torch/ in {} ({}); reinstall ootci, or set "
        "OOTCI_PYTHON_DIR to the folder that holds ootci_torch/",
        dir, why));
  return dir;
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
  if (ec) exe.clear();
  std::string build_tree = std::filesystem::weakly_canonical(OOTCI_BUILD_TREE, ec).string();
  return choose_python_dir(env_dir ? env_dir : "", exe, is_dir, OOTCI_PYTHON_DIR, build_tree);
}

std::string ootci_cache_dir() {
  if (const char* dir = std::getenv("OOTCI_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/ootci";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/ootci";
}

std::vector<std::string> python_command(const BackendConfig& backend,
                                        const std::string& python_dir) {
  if (backend.root.empty()) return {backend.python};
  std::vector<std::string> binds = {backend.workspace,  backend.dir,  backend.torch_root,
                                    backend.device_root, python_dir,  ootci_cache_dir(),
                                    "/tmp"};
  binds.insert(binds.end(), backend.pythonpath.begin(), backend.pythonpath.end());
  binds.insert(binds.end(), backend.root_binds.begin(), backend.root_binds.end());
  // The workspace may not exist yet: make it, so it is bound rather than left out.
  std::error_code ec;
  std::filesystem::create_directories(backend.workspace, ec);
  return root_command(backend.root, binds, {backend.python});
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
