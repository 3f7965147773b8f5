#pragma once
// What `ootci discover` recorded in one run, read from the evidence store once per run however
// many plan files share it (`select changed`).
#include <map>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

struct RunFacts {
  std::map<std::string, std::vector<std::string>> ops;              // test id -> ops it called
  std::map<std::string, std::vector<std::string>> op_dtypes;        // test id -> "op:dtype"
  std::map<std::string, std::vector<std::string>> input_op_dtypes;  // reached only in inputs
  std::map<std::string, std::string> input_probes;  // test id -> the input probe's finding
  std::vector<TestResult> results;
};

class RunFactCache {
 public:
  // `with_input_probes`: read the input probe's findings too (only --staged asks them).
  RunFactCache(EvidenceStore& store, bool with_input_probes)
      : store_(store), with_input_probes_(with_input_probes) {}
  const RunFacts& of(const std::string& run_id);

 private:
  EvidenceStore& store_;
  bool with_input_probes_;
  std::map<std::string, RunFacts> runs_;
};

}  // namespace ootci
