// The relay's own config file.
#include "base/error.h"
#include "fuzz/fuzz_input.h"
#include "relay/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ootci::load_relay_config(ootci::fuzz::file_with(data, size, "-relay.yaml"));
  } catch (const ootci::Error&) {
  }
  return 0;
}
