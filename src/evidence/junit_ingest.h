#pragma once
// pytest JUnit XML reports into evidence results (docs/run.md, `ootci ingest`).
#include <cstddef>
#include <functional>
#include <string>

#include "evidence/evidence_store.h"

namespace ootci {

// Bytes read at a time: bounds memory for reports of hundreds of megabytes.
constexpr size_t kJunitChunkBytes = 8 << 20;
// Results per EvidenceStore::record_batch when ingesting. Each commit rewrites every index page
// it touched, so bigger batches write less: on a 50 MB report 20000 took 1.0 s against 1.9 s for
// 5000, while holding the write lock for about 0.2 s at a time.
constexpr size_t kJunitBatchResults = 20000;

// Calls `sink` once per <testcase>, in file order. Fills everything a report holds: test_id,
// file, cls, name, outcome, duration_s, error_class, message, reruns, flaky, and mode, op, dtype,
// device from `ootci.*` properties; leaves finished_ms 0. Throws Error naming the file and the
// byte offset of what is wrong.
void ingest_junit(const std::string& path, const std::function<void(TestResult&&)>& sink,
                  size_t chunk_bytes = kJunitChunkBytes);

// Where a testcase lives, from its `classname` and optional `file` attributes:
// "a.b.test_x.TestFoo" -> {"a/b/test_x.py", "TestFoo"}; nested classes are joined with "::".
struct JunitLocation {
  std::string file;
  std::string cls;
};
JunitLocation junit_location(const std::string& classname, const std::string& file_attr);

// The exception type a failure message names: the first token like "RuntimeError:" or
// "torch.OutOfMemoryError:" (last dotted component), or "" when there is none.
std::string error_class_in(const std::string& message);

}  // namespace ootci
