#pragma once
// Which trusted CA certificates HTTPS requests use. The wheel carries Debian's OpenSSL, whose
// built-in locations (/usr/lib/ssl/cert.pem and certs/) exist on Debian and Ubuntu but not on
// RHEL or UBI, where the system's bundle lives under /etc/pki.
#include <functional>
#include <string>

namespace ootci {

// The CA bundle to hand OpenSSL: "" when OpenSSL finds certificates by itself (SSL_CERT_FILE or
// SSL_CERT_DIR is set, or its built-in file or folder exists); else the first of the well-known
// system bundles that exists (Debian, RHEL, SUSE, Alpine…); "" when there is none.
std::string system_ca_bundle();

// system_ca_bundle()'s choice from its inputs: the environment's SSL_CERT_FILE and SSL_CERT_DIR
// ("" when unset), OpenSSL's built-in file and folder, and an existence test.
std::string choose_ca_bundle(const std::string& env_file, const std::string& env_dir,
                             const std::string& builtin_file, const std::string& builtin_dir,
                             const std::function<bool(const std::string&)>& exists);

}  // namespace ootci
