#include "plan/python_versions.h"

#include <fmt/format.h>

#include <regex>

#include "base/subprocess.h"
#include "plan/plan_env.h"

namespace ootci {

PythonVersions probe_python_versions(const BackendConfig& backend) {
  // torch's version from torch/version.py, which torch.__version__ repeats.
  std::vector<std::string> command = python_command(backend, ootci_python_dir());
  command.push_back("-c");
  command.push_back(
      "import sys, os, importlib.util\n"
      "print(sys.version.split()[0])\n"
      "spec = importlib.util.find_spec('torch')\n"
      "path = os.path.join(spec.submodule_search_locations[0], 'version.py') if spec else ''\n"
      "if os.path.exists(path):\n"
      "    names = {}\n"
      "    exec(open(path).read(), names)\n"
      "    print(names['__version__'])\n"
      "elif spec:\n"
      "    import torch\n"
      "    print(torch.__version__)\n");
  std::string out = output_or_empty(command);
  size_t nl = out.find('\n');
  return {out.substr(0, nl), nl == std::string::npos ? "" : out.substr(nl + 1)};
}

std::string torch_minor(const std::string& version) {
  static const std::regex minor(R"(^(\d+)\.(\d+)(\D.*)?$)");
  std::smatch m;
  if (!std::regex_match(version, m, minor)) return "";
  return m[1].str() + "." + m[2].str();
}

ChosenConfigs choose_test_configs(const BackendConfig& backend, const std::string& version) {
  ChosenConfigs out;
  if (backend.test_config_sets.empty()) {
    out.patterns = backend.test_configs;
    out.where = backend.test_config_where;
    return out;
  }
  std::string minor = torch_minor(version);
  auto it = backend.test_config_sets.find(minor);
  if (it == backend.test_config_sets.end()) {
    std::string sets;
    for (const auto& [key, _] : backend.test_config_sets) sets += (sets.empty() ? "" : ", ") + key;
    out.error = fmt::format(
        "{}: test_configs.by_torch has no set for torch {} (backend.python {} {}); its sets: {}",
        backend.test_config_sets_where,
        version.empty() ? "(none found)" : minor.empty() ? version : minor, backend.python,
        version.empty() ? "has no torch, or did not answer" : "runs torch " + version, sets);
    return out;
  }
  out.set = minor;
  out.patterns = it->second.patterns;
  out.where = it->second.where;
  return out;
}

}  // namespace ootci
