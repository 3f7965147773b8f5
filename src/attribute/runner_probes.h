#pragma once
// Probes on the real thing: each combination is materialized (git worktrees of the backend and
// the tests, the backend's build, the core's prepared environment) and the variants run with
// `ootci run`'s runner into a separate evidence store, so probes never count as runs of the
// backend (docs/attribute.md).
#include <atomic>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include "attribute/attribution.h"
#include "plan/backend_config.h"
#include "run/target_revisions.h"

namespace ootci {

class RunnerProbes : public Probes {
 public:
  // `cache_dir` keeps worktrees, builds and core environments across attributions; `work_dir`
  // holds this attribution's probe runs and their evidence.
  // `current` are the revisions checked out and prepared here now: a combination that uses them
  // runs on this checkout and environment as they are, with no worktree, build or prepare.
  // `stop` (may be null) is passed to every probe run (RunRequest::stop).
  RunnerProbes(BackendConfig config, TargetRevisions current, std::string cache_dir,
               std::string work_dir, std::ostream& log, const std::atomic<bool>* stop = nullptr);

  ProbeOutcome run(const Combination& combination, const std::vector<std::string>& ids,
                   int reruns) override;
  std::vector<Commit> commits_between(Target target, const std::string& from,
                                      const std::string& to) override;

  // The backend config as it is at `combination`; throws Error naming what could not be made.
  BackendConfig materialize(const Combination& combination);

 private:
  std::string repo_of(Target target) const;
  std::string worktree(Target target, const std::string& rev);
  const std::map<std::string, std::string>& core_environment(const std::string& rev);
  void build_backend(const std::string& dir, const std::string& backend_rev,
                     const std::string& core_rev, const std::map<std::string, std::string>& env);

  BackendConfig config_;
  TargetRevisions current_;
  std::string cache_dir_, work_dir_;
  std::ostream& log_;
  const std::atomic<bool>* stop_;
  std::map<std::string, std::map<std::string, std::string>> core_env_;  // by core revision
  std::map<std::string, std::string> build_failures_;                   // "<backend>:<core>" -> why
  int probe_count_ = 0;
};

// "Subject (#123)" or a "Pull Request resolved: .../pull/123" line: PyTorch's merge conventions.
std::optional<int> pr_number(const std::string& subject, const std::string& body);

}  // namespace ootci
