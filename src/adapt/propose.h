#pragma once
// `ootci select propose` and `ootci select rebucket` as functions (docs/select.md): evidence in,
// test-suite configs and a printed summary out. propose is in propose.cc, rebucket in
// rebucket_command.cc.
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapt/bucket.h"
#include "evidence/evidence_store.h"
#include "plan/backend_config.h"

namespace ootci {

// Where the device's capabilities come from.
struct CapabilitySources {
  std::string sources_root;  // the backend's sources (code evidence); "" for none
  std::string dispatch_key = "PrivateUse1";
};

// Code evidence from the sources, and per upstream file (relpath) the global.supported_dtypes
// and supported_ops of the backend's configs. A config set that does not resolve is a warning on
// `err`, not an error: it only narrows what is proposed.
struct FileCapabilities {
  Capabilities code;                            // no global lists
  std::map<std::string, Capabilities> by_file;  // code evidence plus the file's global lists
  const Capabilities& of(const std::string& relpath) const;
};
FileCapabilities load_capabilities(const BackendConfig& backend, const CapabilitySources& sources,
                                   std::ostream& err);

struct ProposeRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::string out_dir;
  std::vector<std::string> file_globs;  // on relpaths; empty: every discovered file
  bool overwrite_human = false;
  bool dry_run = false;
  bool use_agent = true;  // consult select.agent_command when it is set
  size_t later_runs = 20;
  CapabilitySources sources;
  // When set, {"version": 1, "variants": {test_id: mode}} is written there: how the proposed
  // configs decide every variant of the evidence ("skip" for one never created, "human" for one a
  // human entry decides), for review and for checking a plan against the proposal.
  std::string variants_path;
};

// Buckets every variant in scope, writes one config per upstream file, and prints what changed.
// Returns the exit code: 0, or 1 when a file could not be proposed (the others still are).
int propose(const ProposeRequest& request, std::ostream& out, std::ostream& err);

struct RebucketRequest {
  BackendConfig backend;
  std::string evidence_path;
  std::string run_id;
  std::string out_dir;
  bool write = false;
  int promote_after = 2;
  CapabilitySources sources;
};

// Proposes moves from the run's evidence, writes <out>/regressions.json, and with `write` applies
// the moves to the configs in out_dir. Returns the exit code.
int rebucket(const RebucketRequest& request, std::ostream& out, std::ostream& err);

// Shared by both commands.
// The evidence database at `db`; throws Error when there is none (selection only reads).
std::unique_ptr<EvidenceStore> open_existing_evidence(const std::string& db);
// Throws Error unless `text` is a config `ootci plan check` accepts: checked before it replaces
// anything.
void validate_proposed_config(const std::string& path, const std::string& text);
// The dtypes every op of the backend supports, when the capabilities say.
std::optional<std::set<std::string>> global_dtypes(const Capabilities& caps);

}  // namespace ootci
