#include "dispatch/scaffold.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/error.h"
#include "dispatch/scaffold_templates.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string fill(const char* templ, const std::string& device) {
  // A Python module name cannot hold '-'.
  std::string module = device;
  std::replace(module.begin(), module.end(), '-', '_');
  return replace_all(replace_all(templ, "@MODULE@", module), "@DEVICE@", device);
}

}  // namespace

void validate_device_name(const std::string& device) {
  bool ok = !device.empty() && std::all_of(device.begin(), device.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!ok)
    throw Error(fmt::format(
        "invalid device name '{}': use lowercase letters, digits, '_' and '-' (it names the "
        "torch device, runner labels and the ciflow/crcr/<device> label)",
        device));
}

std::map<std::string, std::string> scaffold_files(const std::string& device) {
  validate_device_name(device);
  namespace t = scaffold_templates;
  return {
      {".github/workflows/ootci.yml", fill(t::kWorkflow, device)},
      {".github/actions/setup-ootci/action.yml", fill(t::kSetupAction, device)},
      {"ootci.yaml", fill(t::kOotciYaml, device)},
      {"configs/test_view_ops.yaml", fill(t::kViewOpsConfig, device)},
      {"README.ootci.md", fill(t::kReadme, device)},
  };
}

std::vector<std::string> existing_scaffold_files(const std::string& dir,
                                                 const std::map<std::string, std::string>& files) {
  std::vector<std::string> existing;
  for (const auto& [path, content] : files) {
    std::error_code ec;
    if (fs::symlink_status(fs::path(dir) / path, ec).type() != fs::file_type::not_found)
      existing.push_back(path);
  }
  return existing;
}

std::vector<std::string> write_scaffold(const std::string& dir,
                                        const std::map<std::string, std::string>& files,
                                        bool force) {
  if (!force) {
    std::vector<std::string> existing = existing_scaffold_files(dir, files);
    if (!existing.empty())
      throw Error(fmt::format("{}: {} already exist{}: {} (nothing written; --force overwrites)",
                              dir, existing.size() == 1 ? "a file" : "files",
                              existing.size() == 1 ? "s" : "", fmt::join(existing, ", ")));
  }
  std::vector<std::string> written;
  for (const auto& [path, content] : files) {
    write_file_atomically((fs::path(dir) / path).string(), content);
    written.push_back(path);
  }
  return written;
}

}  // namespace ootci
