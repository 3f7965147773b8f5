#include "net/crypto.h"

#include <gtest/gtest.h>

#include "net/http_client.h"
#include "net/jwt.h"

namespace ootci {
namespace {

TEST(Crypto, HmacMatchesGitHubDocumentedExample) {
  // From GitHub's "Validating webhook deliveries" documentation.
  EXPECT_EQ(github_signature("It's a Secret to Everybody", "Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
}

TEST(Crypto, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

TEST(Crypto, Base64UrlRoundTrip) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\x00x"}) {
    auto back = base64url_decode(base64url_encode(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_FALSE(base64url_decode("a*b"));
}

TEST(Crypto, StandardBase64AsGitHubsContentsApiSendsIt) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
  // GitHub wraps its base64 at 60 columns; the decoder takes it once the newlines are gone.
  EXPECT_EQ(base64url_decode("K/8=").value(), "\x2b\xff");
}

TEST(Jwt, Rs256SignsAndVerifies) {
  std::string priv = generate_rsa_private_key_pem();
  std::string pub = public_key_pem_from_private(priv);
  std::string token = jwt_sign_rs256({{"iss", "123"}, {"exp", 99}}, priv, "k1");
  auto parts = jwt_decode(token);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->header["kid"], "k1");
  EXPECT_EQ(parts->claims["iss"], "123");
  EXPECT_TRUE(jwt_verify_rs256(*parts, pub));
  parts->signing_input[3] ^= 1;
  EXPECT_FALSE(jwt_verify_rs256(*parts, pub));
  std::string other_pub = public_key_pem_from_private(generate_rsa_private_key_pem());
  EXPECT_FALSE(jwt_verify_rs256(*jwt_decode(token), other_pub));
}

TEST(Jwt, Hs256RejectsTamperingAndWrongKey) {
  std::string token = jwt_sign_hs256({{"d", "x"}}, "key");
  EXPECT_EQ((*jwt_verify_hs256(token, "key"))["d"], "x");
  EXPECT_FALSE(jwt_verify_hs256(token, "other"));
  std::string forged = jwt_sign_hs256({{"d", "y"}}, "other");
  std::string spliced = token.substr(0, token.find('.')) + forged.substr(forged.find('.'));
  EXPECT_FALSE(jwt_verify_hs256(spliced, "key"));
  EXPECT_FALSE(jwt_verify_hs256("not-a-jwt", "key"));
}

TEST(Url, Parses) {
  auto u = parse_url("http://127.0.0.1:8080/repos/a/b/dispatches");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path, "/repos/a/b/dispatches");
  EXPECT_EQ(parse_url("https://api.github.com")->port, 443);
  EXPECT_FALSE(parse_url("ftp://x"));
  EXPECT_FALSE(parse_url("http://x:99999/"));
}

TEST(Http, NetworkErrorHasNoStatus) {
  HttpRequest req;
  req.url = "http://127.0.0.1:1/";
  req.timeout_ms = 1000;
  HttpResult r = http_send(req);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
}

}  // namespace
}  // namespace ootci

#include <httplib.h>

#include "net/listen_backlog.h"

namespace ootci {
namespace {

TEST(ListenBacklog, FindsAndRaisesTheServerSocket) {
  httplib::Server server;
  int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_TRUE(raise_listen_backlog(port));
  EXPECT_FALSE(raise_listen_backlog(1));
}

}  // namespace
}  // namespace ootci
