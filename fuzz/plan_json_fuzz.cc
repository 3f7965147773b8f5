// A plan file from outside (`ootci plan env --plan FILE`), read as a file: the plan or
// ootci::Error naming the file and the field.
#include "base/error.h"
#include "fuzz/fuzz_input.h"
#include "plan/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ootci::read_plan_json(ootci::fuzz::file_with(data, size, ".plan.json"));
  } catch (const ootci::Error&) {
  }
  return 0;
}
