#include "net/ca_bundle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace ootci {
namespace {

std::string bundle_among(const std::set<std::string>& files, const std::string& env_file = "",
                         const std::string& env_dir = "") {
  return choose_ca_bundle(env_file, env_dir, "/usr/lib/ssl/cert.pem", "/usr/lib/ssl/certs",
                          [&](const std::string& p) { return files.count(p) > 0; });
}

TEST(CaBundle, OpenSslsOwnLocationsAndTheEnvironmentComeFirst) {
  EXPECT_EQ(bundle_among({"/usr/lib/ssl/certs", "/etc/pki/tls/certs/ca-bundle.crt"}), "");
  EXPECT_EQ(bundle_among({"/usr/lib/ssl/cert.pem", "/etc/pki/tls/certs/ca-bundle.crt"}), "");
  EXPECT_EQ(bundle_among({"/etc/pki/tls/certs/ca-bundle.crt"}, "/mine.pem"), "");
  EXPECT_EQ(bundle_among({"/etc/pki/tls/certs/ca-bundle.crt"}, "", "/mine"), "");
}

TEST(CaBundle, ElseTheSystemsBundle) {
  // UBI 9: no /usr/lib/ssl, the bundle under /etc/pki.
  EXPECT_EQ(bundle_among({"/etc/pki/tls/certs/ca-bundle.crt",
                          "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"}),
            "/etc/pki/tls/certs/ca-bundle.crt");
  EXPECT_EQ(bundle_among({"/etc/ssl/ca-bundle.pem"}), "/etc/ssl/ca-bundle.pem");
  EXPECT_EQ(bundle_among({"/etc/ssl/cert.pem"}), "/etc/ssl/cert.pem");
  EXPECT_EQ(bundle_among({}), "");
}

TEST(CaBundle, OnThisMachineOpenSslFindsItsOwn) {
  // Debian: /usr/lib/ssl/certs exists, so nothing is handed to OpenSSL.
  if (std::filesystem::exists("/usr/lib/ssl/certs")) {
    EXPECT_EQ(system_ca_bundle(), "");
  }
}

}  // namespace
}  // namespace ootci
