#include "net/oidc.h"

#include <gtest/gtest.h>

#include "base/time.h"
#include "net/crypto.h"
#include "net/jwt.h"
#include "testing/oidc_issuer.h"

namespace ootci {
namespace {

TEST(Oidc, JwkRoundTripsToAPublicKeyThatVerifies) {
  std::string priv = generate_rsa_private_key_pem();
  auto jwk = rsa_jwk_from_private(priv, "k");
  std::string pem = rsa_pem_from_jwk(jwk["n"], jwk["e"]);
  ASSERT_FALSE(pem.empty());
  auto parts = jwt_decode(jwt_sign_rs256({{"a", 1}}, priv));
  EXPECT_TRUE(jwt_verify_rs256(*parts, pem));
  EXPECT_EQ(rsa_pem_from_jwk("", "AQAB"), "");
}

TEST(Oidc, VerifiesClaimsWithLeewayAndCachesTheJwks) {
  OidcIssuerStandin issuer;
  issuer.start();
  OidcVerifier v({{issuer.issuer(), issuer.jwks_url(), "aud-1", "github"}}, 60);
  auto claims = issuer.claims_for("acme/x", "aud-1");
  auto ok = v.verify(issuer.mint(claims), now_s());
  ASSERT_TRUE(std::holds_alternative<VerifiedToken>(ok)) << std::get<std::string>(ok);
  EXPECT_EQ(std::get<VerifiedToken>(ok).claims["repository"], "acme/x");
  // An audience list that contains ours is fine.
  claims["aud"] = {"other", "aud-1"};
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(v.verify(issuer.mint(claims), now_s())));
  // Within the leeway, an expired token still passes; beyond it, not.
  claims["exp"] = now_s() - 30;
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(v.verify(issuer.mint(claims), now_s())));
  claims["exp"] = now_s() - 120;
  EXPECT_EQ(std::get<std::string>(v.verify(issuer.mint(claims), now_s())), "token expired");
  claims["exp"] = now_s() + 300;
  claims["iat"] = now_s() + 600;
  EXPECT_EQ(std::get<std::string>(v.verify(issuer.mint(claims), now_s())),
            "token issued in the future");
  EXPECT_EQ(issuer.jwks_requests(), 1);  // one fetch served every verification
}

TEST(Oidc, RejectsWhatAnAttackerWouldTry) {
  OidcIssuerStandin issuer;
  issuer.start();
  OidcVerifier v({{issuer.issuer(), issuer.jwks_url(), "aud-1", "github"}}, 60);
  auto claims = issuer.claims_for("acme/x", "aud-1");
  auto err = [&](const std::string& token) {
    auto r = v.verify(token, now_s());
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "accepted";
  };
  EXPECT_EQ(err("garbage"), "malformed token");
  EXPECT_EQ(err(jwt_sign_hs256(claims, issuer.public_key_pem())), "unsupported algorithm");
  std::string none =
      base64url_encode(R"({"alg":"none"})") + "." + base64url_encode(claims.dump()) + ".";
  EXPECT_EQ(err(none), "unsupported algorithm");
  std::string other_key = generate_rsa_private_key_pem();
  EXPECT_EQ(err(jwt_sign_rs256(claims, other_key, "test-key-1")), "bad signature");
  EXPECT_EQ(err(jwt_sign_rs256(claims, other_key, "attacker-kid")), "unknown signing key");
  auto wrong_aud = claims;
  wrong_aud["aud"] = "aud-2";
  EXPECT_EQ(err(issuer.mint(wrong_aud)), "wrong audience");
  auto wrong_iss = claims;
  wrong_iss["iss"] = "https://evil.example";
  EXPECT_EQ(err(issuer.mint(wrong_iss)), "unsupported issuer");
  auto no_exp = claims;
  no_exp.erase("exp");
  EXPECT_EQ(err(issuer.mint(no_exp)), "missing exp");
  // Unknown kids refetch the JWKS at most once per 30 s, so they cannot hammer the issuer.
  EXPECT_LE(issuer.jwks_requests(), 2);
}

}  // namespace
}  // namespace ootci

#include <thread>

namespace ootci {
namespace {

TEST(Oidc, ConcurrentFirstVerificationsShareOneJwksFetch) {
  OidcIssuerStandin issuer;
  issuer.start();
  OidcVerifier v({{issuer.issuer(), issuer.jwks_url(), "aud-1", "github"}}, 60);
  std::string token = issuer.mint(issuer.claims_for("acme/x", "aud-1"));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back(
        [&] { ok += std::holds_alternative<VerifiedToken>(v.verify(token, now_s())); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 8);  // nobody was turned away while the first fetch was in flight
  EXPECT_EQ(issuer.jwks_requests(), 1);
}

}  // namespace
}  // namespace ootci
