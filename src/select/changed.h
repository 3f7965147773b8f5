#pragma once
// `ootci select changed`: the tests a change can break, from what changed (a backend commit
// range, an upstream commit range) and what each test was seen calling (`ootci discover`), with
// a reason for every selected test or file (docs/select.md).
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "backend/backend_config.h"
#include "backend/evidence_store.h"

namespace ootci {

// One change to an op's kernel, and the dtypes it can affect (docs/select.md, "Dtypes").
struct OpChange {
  std::string why;               // "backend csrc/kernels.cpp:78 changes aten::view (kernel ...)"
  std::set<std::string> dtypes;  // torch names; empty: every dtype
  std::string dtype_why;         // how the code limits it to those dtypes
};

// What one range of commits changed, in terms the selection understands.
struct ChangeFacts {
  std::vector<std::string> full_plan;  // why every plan file must run (empty: not needed)
  std::map<std::string, std::vector<OpChange>> ops;       // touched op -> its changes
  std::map<std::string, std::vector<std::string>> files;  // plan relpath to run whole -> why
  nlohmann::json summary = nlohmann::json::object();
  void merge(const ChangeFacts& other);  // everything but the summary
};

// Backend range FROM..TO of the git repo at `repo` (paths relative to `repo`): kernels changed
// through C++ and Python registrations for `dispatch_key`; the fallback, headers, build files and
// code that registers nothing force the full plan.
ChangeFacts backend_changes(const std::string& repo, const std::string& range,
                            const std::string& dispatch_key);

// Upstream range FROM..TO of the PyTorch checkout at `repo`: changed test files of the plan run
// whole; operator implementations (aten/src/ATen/native/**, native_functions.yaml) touch ops;
// any other core change forces the full plan.
ChangeFacts upstream_changes(const std::string& repo, const std::string& range,
                             const std::set<std::string>& plan_relpaths);

struct PlanFileRef {
  std::string relpath;
  std::string path;  // absolute, to tell whether its discovery is stale
};

struct ChangedSelection {
  std::set<std::string> files;                              // relpaths run whole
  std::set<std::string> tests;                              // variant ids
  std::map<std::string, std::vector<std::string>> reasons;  // test id or relpath -> why
  nlohmann::json summary = nlohmann::json::object();
  // {"files": [...], "tests": [...], "reasons": {...}, "summary": {...}}: `ootci run --select`.
  nlohmann::json to_json() const;
};

// The tests of the plan files that the facts reach: whole files for the full plan and changed
// test files; for touched ops, every test whose latest discovery called an op of the same family
// (op_family) with one of the change's dtypes (any dtype when the change is not limited to some,
// or when the discovery recorded no dtypes); a file never discovered, or changed since its
// discovery, runs whole (missing evidence means running more, never less).
ChangedSelection select_from_facts(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                                   EvidenceStore& store);

struct ChangedRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::string backend_range, upstream_range;  // "FROM..TO"; at least one
  std::string backend_repo, upstream_repo;    // default device_root and torch_root
  std::string dispatch_key = "PrivateUse1";
};
ChangedSelection select_changed(const ChangedRequest& request);

// Human-readable summary for stdout.
std::string format_changed_summary(const ChangedSelection& selection);

}  // namespace ootci
