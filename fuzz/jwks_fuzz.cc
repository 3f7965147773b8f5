// An OIDC issuer's JWKS document as the relay fetches it: the RSA keys it holds, never a crash.
#include "fuzz/fuzz_input.h"
#include "net/oidc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ootci::parse_jwks(ootci::fuzz::text(data, size));
  return 0;
}
