// CRCR's allowlist YAML: accepted, or refused with ootci::Error naming file:line:column. Any other
// exception is a finding.
#include "base/error.h"
#include "base/yaml_doc.h"
#include "fuzz/fuzz_input.h"
#include "relay/allowlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ootci::Allowlist a = ootci::Allowlist::parse(
        ootci::load_yaml_text("allowlist.yml", ootci::fuzz::text(data, size)));
    for (const auto& e : a.entries()) a.find(e.repo);
  } catch (const ootci::Error&) {
  }
  return 0;
}
