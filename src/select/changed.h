#pragma once
// `ootci select changed`: the tests a change can break, from what changed (a backend commit
// range, an upstream commit range) and what each test was seen calling (`ootci discover`), with
// a reason for every selected test or file (docs/select.md).
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "plan/backend_config.h"

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

// How directly the evidence ties a selected test or file to the change, strongest first: the
// order in which `select changed --budget` keeps them.
enum class Evidence {
  kTestChanged,  // the upstream test file itself changed
  kOpAndDtype,   // it ran a changed op with a dtype the change can affect
  kOp,           // it ran a changed op (the change can affect every dtype)
  kOpAnyDtype,   // it ran a changed op; its dtypes were not recorded
  kInputsOnly,   // it ran a changed op (with such a dtype) only while generating its inputs
  kUnknown,      // no evidence either way: never discovered, stale, crashed, or the full plan
};
std::string to_string(Evidence e);

struct ChangedSelection {
  std::set<std::string> files;                              // relpaths run whole
  std::set<std::string> tests;                              // variant ids
  std::map<std::string, std::vector<std::string>> reasons;  // test id or relpath -> why
  std::map<std::string, Evidence> evidence;                 // test id or relpath -> strongest
  std::set<std::string> dropped;  // selected, then left out by --budget (ids and relpaths)
  // --staged: tests that `ootci run` runs only when the first stage shows the change raising.
  std::set<std::string> then_tests;
  nlohmann::json summary = nlohmann::json::object();
  // Adds a reason for a test or file: at most a few, the first ones say why, then "... and more".
  void add_reason(const std::string& id, const std::string& why);
  // Keeps the strongest evidence seen for a test or file.
  void note_evidence(const std::string& id, Evidence e);
  // {"files": [...], "tests": [...], "reasons": {...}, "evidence": {...}, "dropped": [...],
  // "summary": {...}} and with --staged "then": {"tests": [...], "when": "..."}: `ootci run
  // --select` reads files, tests and then.
  nlohmann::json to_json() const;
};

// The tests of the plan files that the facts reach: whole files for the full plan and changed
// test files; for touched ops, every test whose latest discovery called an op of the same family
// (op_family) with one of the change's dtypes (any dtype when the change is not limited to some,
// or when the discovery recorded no dtypes); a file never discovered, or changed since its
// discovery, runs whole (missing evidence means running more, never less).
struct SelectOptions {
  bool ignore_dtypes = false;  // select by op alone, as before dtype evidence (for comparison)
  // Leave out the tests that reached a changed op only while generating their inputs: a change
  // that alters values there changes what a test draws, not what it checks, but one that raises
  // there fails them all, and then only the tests that call the op themselves catch it.
  bool own_calls_only = false;
  // Run those tests in a second stage instead, when the first stage shows the change raising (a
  // failure other than a mismatch): a change that alters values costs only the tests that call
  // the op themselves, and one that raises still reaches every test it fails. A changed op that
  // no test calls itself keeps its input-generation tests in the first stage.
  bool staged = false;
};
ChangedSelection select_from_facts(const ChangeFacts& facts, const std::vector<PlanFileRef>& plan,
                                   EvidenceStore& store, const SelectOptions& options = {});

struct ChangedRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::string backend_range, upstream_range;  // "FROM..TO"; at least one
  std::string backend_repo, upstream_repo;    // default device_root and torch_root
  std::string dispatch_key = "PrivateUse1";
  SelectOptions options;
  double budget = 0;  // share of the full plan's test time to keep (0: no budget)
};
ChangedSelection select_changed(const ChangedRequest& request);

// Human-readable summary for stdout.
std::string format_changed_summary(const ChangedSelection& selection);

}  // namespace ootci
