#include "job/scaffold.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/error.h"
#include "job/scaffold_templates.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// What the README says the setup action installs from.
std::string source_summary(const OotciSource& source) {
  if (!source.wheel.empty())
    return source.wheel_sha256.empty()
               ? fmt::format("the wheel `{}` of this repository", source.wheel)
               : fmt::format("the wheel at <{}> (SHA-256 `{}`)", source.wheel,
                             lowercase(source.wheel_sha256));
  if (!source.version.empty())
    return fmt::format(
        "`pip install ootci=={}` from {}", source.version,
        source.index_url.empty() ? "pip's default index" : "<" + source.index_url + ">");
  if (!source.deb_url.empty())
    return fmt::format("the Debian package at <{}> (SHA-256 `{}`)", source.deb_url,
                       lowercase(source.deb_sha256));
  if (!source.repository.empty())
    return fmt::format("source: `{}` at {}", source.repository,
                       source.ref.empty() ? "its default branch" : "`" + source.ref + "`");
  return "**nothing yet**: until you set one of the two below, every job fails at its first step "
         "and says so";
}

std::string fill(const char* templ, const std::string& device, const OotciSource& source) {
  // A Python module name cannot hold '-'.
  std::string module = device;
  std::replace(module.begin(), module.end(), '-', '_');
  const std::map<std::string, std::string> values = {
      {"@DEVICE@", device},
      {"@MODULE@", module},
      {"@OOTCI_SOURCE@", source_summary(source)},
      {"@OOTCI_DEB_URL@", source.deb_url},
      {"@OOTCI_DEB_SHA256@", lowercase(source.deb_sha256)},
      {"@OOTCI_REPOSITORY@", source.repository},
      {"@OOTCI_REF@", source.ref},
      {"@OOTCI_WHEEL@", source.wheel},
      {"@OOTCI_WHEEL_SHA256@", lowercase(source.wheel_sha256)},
      {"@OOTCI_VERSION@", source.version},
      {"@OOTCI_INDEX_URL@", source.index_url},
  };
  // One pass, so that nothing in a value (a URL may hold '@') is taken for a placeholder.
  std::string text, rest = templ;
  for (size_t at = rest.find('@'); at != std::string::npos; at = rest.find('@')) {
    size_t end = rest.find('@', at + 1);
    auto value =
        end == std::string::npos ? values.end() : values.find(rest.substr(at, end - at + 1));
    if (value == values.end()) {
      text += rest.substr(0, at + 1);
      rest.erase(0, at + 1);
      continue;
    }
    text += rest.substr(0, at) + value->second;
    rest.erase(0, end + 1);
  }
  return text + rest;
}

// Characters a URL may hold unescaped (RFC 3986). The generated action double-quotes these
// values, so they hold no " \ { } or space to begin with.
bool plain_url(const std::string& text) {
  static const std::string punctuation = "-._~:/?#[]@!$&'()*+,;=%";
  return !text.empty() && text[0] != '-' && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || punctuation.find(c) != std::string::npos;
  });
}

bool hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

bool http_url(const std::string& text) {
  return plain_url(text) && (text.starts_with("https://") || text.starts_with("http://"));
}

// The wheel, the package index and the version: what pip gets.
void validate_pip_source(const OotciSource& s) {
  if (!s.wheel.empty() && !s.version.empty())
    throw Error("--ootci-wheel and --ootci-version are two ways to install ootci: choose one");
  bool remote = s.wheel.starts_with("http://") || s.wheel.starts_with("https://");
  if (remote && !http_url(s.wheel))
    throw Error(fmt::format(
        "--ootci-wheel '{}': expected an http(s) URL of plain URL characters (percent-encode the "
        "others)",
        s.wheel));
  bool plain_path = std::all_of(s.wheel.begin(), s.wheel.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
           c == '/' || c == '+';
  });
  if (!s.wheel.empty() && !remote && (!plain_path || s.wheel[0] == '-' || s.wheel[0] == '/'))
    throw Error(fmt::format(
        "--ootci-wheel '{}': expected an http(s) URL or a path relative to the repository of "
        "letters, digits, '.', '_', '-', '+' and '/'",
        s.wheel));
  if (!s.wheel.empty() && !s.wheel.ends_with(".whl") && !remote)
    throw Error(fmt::format("--ootci-wheel '{}': expected a .whl file", s.wheel));
  if (remote != !s.wheel_sha256.empty())
    throw Error(
        "--ootci-wheel-sha256 goes with a wheel's URL, and a URL needs it: the wheel is installed "
        "only after its SHA-256 matches");
  if (!s.wheel_sha256.empty() && !hex64(s.wheel_sha256))
    throw Error(
        fmt::format("--ootci-wheel-sha256 '{}': expected 64 hex digits (sha256sum of the "
                    "wheel)",
                    s.wheel_sha256));
  bool plain_version = !s.version.empty() &&
                       std::isdigit(static_cast<unsigned char>(s.version[0])) &&
                       std::all_of(s.version.begin(), s.version.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                                c == '+' || c == '!' || c == '-';
                       });
  if (!s.version.empty() && !plain_version)
    throw Error(fmt::format("--ootci-version '{}': expected a version such as 0.14.0", s.version));
  if (!s.index_url.empty() && !http_url(s.index_url))
    throw Error(fmt::format(
        "--ootci-index-url '{}': expected an http(s) URL of plain URL characters", s.index_url));
  if (!s.index_url.empty() && s.version.empty())
    throw Error("--ootci-index-url needs --ootci-version: the version pip installs from it");
}

}  // namespace

void validate_ootci_source(const OotciSource& s) {
  validate_pip_source(s);
  if (s.deb_url.empty() != s.deb_sha256.empty())
    throw Error(
        "--ootci-deb-url and --ootci-deb-sha256 go together: the package is installed only after "
        "its SHA-256 matches");
  if (!s.deb_url.empty() && !http_url(s.deb_url))
    throw Error(fmt::format(
        "--ootci-deb-url '{}': expected an http(s) URL of plain URL characters (percent-encode "
        "the others)",
        s.deb_url));
  if (!s.deb_sha256.empty() && !hex64(s.deb_sha256))
    throw Error(fmt::format(
        "--ootci-deb-sha256 '{}': expected 64 hex digits (sha256sum ootci_<version>_amd64.deb)",
        s.deb_sha256));
  if (!s.repository.empty() && !plain_url(s.repository))
    throw Error(fmt::format("--ootci-repository '{}': expected a git URL of plain URL characters",
                            s.repository));
  bool plain_ref =
      !s.ref.empty() && s.ref[0] != '-' && std::all_of(s.ref.begin(), s.ref.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
               c == '/';
      });
  if (!s.ref.empty() && !plain_ref)
    throw Error(fmt::format(
        "--ootci-ref '{}': expected a branch, tag or commit of letters, digits, '.', '_', '-' "
        "and '/'",
        s.ref));
  if (!s.ref.empty() && s.repository.empty())
    throw Error("--ootci-ref needs --ootci-repository: it names a commit of that repository");
}

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

std::map<std::string, std::string> scaffold_files(const std::string& device,
                                                  const OotciSource& source) {
  validate_device_name(device);
  validate_ootci_source(source);
  namespace t = scaffold_templates;
  return {
      {".github/workflows/ootci.yml", fill(t::kWorkflow, device, source)},
      {".github/workflows/ootci-discovery.yml", fill(t::kDiscoveryWorkflow, device, source)},
      {".github/actions/setup-ootci/action.yml", fill(t::kSetupAction, device, source)},
      {"ootci.yaml", fill(t::kOotciYaml, device, source)},
      {"configs/test_view_ops.yaml", fill(t::kViewOpsConfig, device, source)},
      {"README.ootci.md", fill(t::kReadme, device, source)},
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
