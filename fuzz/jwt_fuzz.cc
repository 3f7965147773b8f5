// A bearer token as a callback presents it: decoded, checked as a callback token (HMAC) and as an
// OIDC token (RS256, issuer, audience, times). Nothing an attacker sends may crash or throw.
#include "fuzz/fuzz_input.h"
#include "net/jwt.h"
#include "net/oidc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Its JWKS URL refuses connections at once; the verifier fetches at most every 30 s.
  static ootci::OidcVerifier oidc(
      {{"https://token.actions.githubusercontent.com", "http://127.0.0.1:9/jwks",
        "pytorch-cross-repo-ci-relay", "github"}});
  std::string token = ootci::fuzz::text(data, size);
  ootci::jwt_verify_hs256(token, "fuzz-key");
  if (auto parts = ootci::jwt_decode(token)) {
    (void)parts->header.dump();
    (void)parts->claims.dump();
  }
  oidc.verify(token, 1800000000);
  return 0;
}
