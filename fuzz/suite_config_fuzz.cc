// A Spyre test-suite YAML (and ootci's additions), loose and strict.
#include "base/error.h"
#include "base/yaml_doc.h"
#include "fuzz/fuzz_input.h"
#include "plan/suite_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool strict : {false, true}) {
    try {
      ootci::parse_suite_config(ootci::load_yaml_text("suite.yaml", ootci::fuzz::text(data, size)),
                                strict);
    } catch (const ootci::Error&) {
    }
  }
  return 0;
}
