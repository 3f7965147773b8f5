#pragma once
// What the evidence store knows about the variants of upstream test files, grouped the way the
// test-suite configs name tests: by config name ("Class::method", the result's `base`).
#include <map>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

// One variant of a test as the evidence store knows it.
struct VariantEvidence {
  std::string test_id;  // relpath::ClassDEVICE::variant
  std::string name;     // the variant's method name ("test_t_view_privateuseone_float32")
  std::string op;       // OpInfo name of an @ops variant ("linalg.vector_norm"), else ""
  std::string dtype;    // "float32", "float32,int64" for multi-dtype variants, else ""
  std::vector<TestResult> results;  // one per run, newest first; the last is the discovery's
  std::vector<std::string> ops;     // aten ops it called on the device (discovery), sorted
  // What discovery's input probe found (test_ops.input_probe): "failed with its inputs shifted
  // by 1.522: AssertionError", "held: 8 shifts of its inputs", or "" (not probed).
  std::string input_probe;
};

// The variants of one config name.
struct BaseEvidence {
  std::string base;                       // "Class::method", or "method" outside a class
  std::vector<VariantEvidence> variants;  // sorted by test_id
};

struct FileEvidence {
  std::string relpath;               // "test/test_view_ops.py"
  std::vector<BaseEvidence> bases;   // sorted by base
  std::vector<std::string> run_ids;  // the runs the results come from, newest first
  const BaseEvidence* find(const std::string& base) const;
};

// For each discovered file: the variants its discovery ran (whole-file errors, which name no
// test, are left out), each with its result in the discovery run and in the newest
// `max_later_runs` later runs of the same backend that are no longer running, and the ops the
// discovery recorded. A later run's result for a test the discovery did not run is ignored.
std::vector<FileEvidence> load_file_evidence(EvidenceStore& store,
                                             const std::vector<DiscoveredFile>& files,
                                             size_t max_later_runs);

// Groups results (and their ops and input probe findings, by test id) into bases; results of one
// test id from several runs must come newest first. Results without a base are left out.
FileEvidence group_evidence(const std::string& relpath, const std::vector<TestResult>& results,
                            const std::map<std::string, std::vector<std::string>>& ops,
                            const std::map<std::string, std::string>& input_probes = {});

}  // namespace ootci
