// A JUnit XML report, streamed: every testcase read or ootci::Error naming the byte offset.
#include "base/error.h"
#include "evidence/junit_ingest.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ootci::fuzz::file_with(data, size, "-junit.xml");
  try {
    // Small chunks, so the chunk boundaries fall inside elements too.
    ootci::ingest_junit(
        path, [](ootci::TestResult&&) {}, 64);
  } catch (const ootci::Error&) {
  }
  return 0;
}
