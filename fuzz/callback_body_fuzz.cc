// A callback body as a downstream CI posts it: parse_callback_body accepts it or says what is
// wrong; it never throws or crashes.
#include "fuzz/fuzz_input.h"
#include "relay/callback_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ootci::parse_callback_body(ootci::fuzz::text(data, size));
  return 0;
}
