#include "github/app_client.h"

#include <gtest/gtest.h>

#include "net/crypto.h"
#include "net/jwt.h"

namespace ootci {
namespace {

TEST(GitHubApp, AppJwtIsRs256WithBackdatedIat) {
  std::string priv = generate_rsa_private_key_pem();
  GitHubApp app({"http://127.0.0.1:1/", 4242, priv});
  auto parts = jwt_decode(app.app_jwt(1000000));
  ASSERT_TRUE(parts);
  EXPECT_TRUE(jwt_verify_rs256(*parts, public_key_pem_from_private(priv)));
  EXPECT_EQ(parts->claims["iss"], "4242");
  EXPECT_EQ(parts->claims["iat"], 1000000 - 60);
  EXPECT_EQ(parts->claims["exp"], 1000000 + 540);
  EXPECT_EQ(app.config().api_url, "http://127.0.0.1:1");
}

TEST(GitHubApp, ParsesGitHubTimes) {
  EXPECT_EQ(parse_github_time("1970-01-02T00:00:00Z"), 86400);
  EXPECT_EQ(parse_github_time("garbage"), 0);
}

TEST(GitHubApp, NetworkFailureSurfacesAsStatusZero) {
  GitHubApp app({"http://127.0.0.1:1", 1, generate_rsa_private_key_pem()});
  auto tok = app.installation_token("a/b");
  EXPECT_FALSE(tok.ok());
  EXPECT_EQ(tok.failure.status, 0);
}

}  // namespace
}  // namespace ootci
