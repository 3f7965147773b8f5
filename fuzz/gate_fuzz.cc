// A repository_dispatch client_payload reaching `ootci gate`: a decision or ootci::Error naming
// the JSON path.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fuzz/fuzz_input.h"
#include "job/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto payload = nlohmann::json::parse(ootci::fuzz::text(data, size), nullptr, false);
  if (payload.is_discarded()) return 0;
  ootci::GatePolicy policy;
  try {
    ootci::decide_gate(policy, "fuzz", payload,
                       [](const std::string&, const std::string&) { return std::nullopt; });
  } catch (const ootci::Error&) {
  }
  return 0;
}
