// POST /dispatch to `ootci agent`, as the relay's generic-webhook transport sends it: the job to
// queue or a 401/400 naming the field, never a throw or a crash. The body is signed with the
// agent's secret, so the fuzzer reaches the parsing behind the signature check; the input's last
// byte, with its high bit, makes the signature wrong instead.
#include "fuzz/fuzz_input.h"
#include "job/agent_dispatch.h"
#include "net/crypto.h"

namespace {
constexpr const char* kSecret = "fuzz-secret";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body = ootci::fuzz::text(data, size);
  std::string signature =
      data[size - 1] & 0x80 ? "sha256=00" : ootci::github_signature(kSecret, body);
  ootci::GatePolicy policy;
  ootci::AgentDispatch d = ootci::parse_agent_dispatch(
      kSecret, signature, body, policy, "npu",
      [](const std::string&, const std::string&) { return std::nullopt; });
  if (d.status != 0 && d.status != 400 && d.status != 401) __builtin_trap();
  return 0;
}
