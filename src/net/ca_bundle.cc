#include "net/ca_bundle.h"

#include <openssl/x509.h>

#include <cstdlib>
#include <filesystem>

namespace ootci {

std::string choose_ca_bundle(const std::string& env_file, const std::string& env_dir,
                             const std::string& builtin_file, const std::string& builtin_dir,
                             const std::function<bool(const std::string&)>& exists) {
  if (!env_file.empty() || !env_dir.empty() || exists(builtin_file) || exists(builtin_dir))
    return "";
  // The places distributions keep one PEM bundle of every trusted CA (the list Go's crypto/x509
  // searches, root_linux.go).
  for (const char* bundle : {
           "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch
           "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL, UBI
           "/etc/ssl/ca-bundle.pem",                             // openSUSE
           "/etc/pki/tls/cacert.pem",                            // OpenELEC
           "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // CentOS, RHEL 7
           "/etc/ssl/cert.pem",                                  // Alpine
       }) {
    if (exists(bundle)) return bundle;
  }
  return "";
}

std::string system_ca_bundle() {
  static const std::string bundle = [] {
    auto env = [](const char* name) {
      const char* value = std::getenv(name);
      return std::string(value ? value : "");
    };
    auto exists = [](const std::string& path) {
      std::error_code ec;
      return std::filesystem::exists(path, ec);
    };
    return choose_ca_bundle(env(X509_get_default_cert_file_env()),
                            env(X509_get_default_cert_dir_env()), X509_get_default_cert_file(),
                            X509_get_default_cert_dir(), exists);
  }();
  return bundle;
}

}  // namespace ootci
