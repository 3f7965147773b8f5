#pragma once
// `ootci.yaml`: which backend runs, where upstream PyTorch lives, and which test-suite configs
// apply (schema in docs/plan.md).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ootci {

// How `ootci run` runs the plan (the `run:` section; docs/run.md).
struct RunSettings {
  int workers = 2;            // test files in parallel
  int reruns = 2;             // extra runs of a failed test, each in a fresh process
  int stall_timeout_s = 300;  // no output for this long: kill the process group, retry once
  // One test running longer than its limit is killed and reported as a timeout. The limit is
  // test_timeout_factor × its recorded duration, at least test_timeout_floor_s, at most
  // test_timeout_s; without a record, test_timeout_s, or discover_test_timeout_s in discovery
  // (run/test_limits.h).
  int test_timeout_s = 900;
  double test_timeout_factor = 10;
  int test_timeout_floor_s = 60;
  int discover_test_timeout_s = 120;
  // A test still running this long after a process its test process started (a device daemon)
  // died unsuccessfully and unreaped is killed and reported as HelperDied; 0: never.
  int dead_helper_grace_s = 10;
  std::vector<std::string> pytest_args;  // appended to every pytest command
  // fork: each file's pytest imports and collects once, then forks a child per batch, isolated
  // test, crash confirmation and rerun (python/ootci_torch/fork_server.py); spawn: a new
  // interpreter for each. A backend with fork_safe: false always gets spawn.
  std::string isolation = "fork";
  // A pool of this many devices (0: none). Each worker owns its own (workers are capped at
  // `devices`) and tells its test processes through backend.device_env ("0", or "1,3" when a
  // worker owns two); a test that needs more devices than its worker owns (deviceCountAtLeast)
  // runs alone, with all of them.
  int devices = 0;
  // Spyre's CI filter: only files (and tests) with one of these labels run; empty: everything.
  std::vector<std::string> labels;
};

// Which dispatches deserve a build (the `gate:` section; docs/dispatch.md).
struct GatePolicy {
  // pull_request actions that build. `closed` is special: it builds only when the PR landed
  // (closed and (merged or merged_label)), because PyTorch's merge bot closes with merged=false.
  std::vector<std::string> pr_actions = {"opened", "synchronize", "reopened", "closed"};
  bool require_merged = false;  // only landed PRs build (Torch Spyre's policy)
  std::string merged_label = "Merged";
  std::vector<std::string> base_branches = {"main"};  // globs on pull_request.base.ref
  // A version pin such as "torch~=2.14.0": its MAJOR.MINOR adds release/MAJOR.MINOR to the bases.
  std::string release_pin;
  std::vector<std::string> labels;  // the PR needs one of them ({device} expands); empty: none
  // The upstream SHA a landed PR builds: head (pull_request.head.sha), merge_commit
  // (merge_commit_sha), or base_head (the base branch's head now, from base_head_command).
  std::string landed_sha = "base_head";
  // argv printing the base branch's head SHA; {repo} and {branch} expand. Default: git ls-remote.
  std::vector<std::string> base_head_command;
  std::vector<std::string> push_refs;  // globs on push `ref`; empty: pushes never build
  // --nightly: argv whose output holds the SHA to build, and the regex (group 1) that finds it.
  std::vector<std::string> nightly_command;
  std::string nightly_sha_pattern = R"(\(([0-9a-f]{40})\))";
};

// How `ootci report` and `ootci agent` call the relay back (the `report:` section).
struct ReportSettings {
  std::string callback_url;  // <relay>/github/callback
  std::string audience = "pytorch-cross-repo-ci-relay";
  // ootci: the relay's callbacks are idempotent, so transient failures are retried; crcr:
  // PyTorch's relay answers a repeated callback with 400, so nothing is retried.
  std::string relay = "crcr";
  int max_attempts = 5;                    // when retrying
  int timeout_s = 10;                      // per attempt, as CRCR's action's curl --max-time
  std::string token_file;                  // an OIDC token to send, outside GitHub Actions
  std::vector<std::string> token_command;  // argv printing an OIDC token ({audience} expands)
  std::string workflow_name = "ootci";     // workflow.name outside GitHub Actions
  std::string artifact_url;
};

// select.tolerance: when propose writes a precision override instead of an xfail for a variant
// that fails only by a numeric mismatch (docs/select.md, "Tolerance proposals").
struct ToleranceSettings {
  double factor = 4;  // the greatest relative error allowed, in reference rtols
  // dtype -> its reference precision: torch's default tolerance of `dtype`, or explicit numbers.
  // Overrides the built-in map entry by entry.
  struct Reference {
    std::string dtype;
    std::optional<double> atol, rtol;
  };
  std::map<std::string, Reference> reference;
};

// How `ootci select propose` consults an external agent (the `select:` section; docs/select.md).
struct SelectSettings {
  // argv of a command that reads one file's evidence bundle (JSON) on stdin and prints bucket
  // proposals (JSON) on stdout; empty: no agent, the deterministic buckets stand.
  std::vector<std::string> agent_command;
  int agent_timeout_s = 300;  // per upstream file
  // test_suite_config.labels of a config propose creates: Spyre's CI selects files by label.
  std::vector<std::string> labels{"unit"};
  ToleranceSettings tolerance;
  // select.pull_requests: how the agent and the workflow `ootci init` writes choose the tests of
  // an open pull request's dispatch. staged: `ootci select changed --staged` over the PR's
  // base..head, in two waves; full: the whole plan, as pushes and nightlies always run.
  std::string pull_requests = "staged";
};

// How `ootci attribute` materializes each moving target at a revision and how much it may probe
// (the `attribute:` section; docs/attribute.md). Paths are absolute and ${VAR} is expanded.
struct AttributeSettings {
  int reruns = 3;  // flake check: reruns of the newly failing variants at the run's own revisions
  int probe_reruns = 1;      // inside every other probe, reruns of a failing variant (flake-aware)
  int max_probes = 16;       // control, expansion and bisection probes together
  std::string backend_repo;  // git repo of the backend (default: device_root)
  std::vector<std::string> backend_build;  // argv run in a backend worktree; empty: no build
  std::string tests_repo;  // git repo holding the upstream tests (default: torch_root)
  std::string core_repo;   // git repo of core, for ranges and subjects; optional
  std::vector<std::string> core_revision;  // argv printing the core revision of this environment
  // argv preparing core revision {rev} in folder {dir}, printing KEY=VALUE lines: the environment
  // of every probe at that revision.
  std::vector<std::string> core_prepare;
};

struct BackendConfig {
  std::string path;  // absolute path of ootci.yaml
  std::string dir;   // its folder: relative paths in it are relative to this
  std::string name;
  std::string device_type;
  std::string python = "/usr/bin/python3";
  // Another root folder that holds the backend's Python and torch (a Debian 13 root with torch
  // 2.6 on a Debian 12 host, say): every Python process runs there through `ootci chroot`, with
  // the folders it needs bound at the same paths (python_command in plan_env.h). "": this machine.
  std::string root;                     // absolute, ${VAR} expanded
  std::vector<std::string> root_binds;  // more host folders to show inside (absolute)
  std::vector<std::string> modules;
  std::vector<std::string> pythonpath;  // absolute
  std::map<std::string, std::string> env;
  bool fork_safe = true;    // false: the device cannot be used in a process forked after import
  std::string device_env;   // e.g. SPYRE_DEVICES, ZE_AFFINITY_MASK: a test process's devices
  std::string torch_root;   // absolute, ${VAR} expanded
  std::string device_root;  // absolute, ${VAR} expanded
  // test_configs entries made absolute (globs not yet expanded), each with "file:line:col".
  std::vector<std::string> test_configs;
  std::vector<std::string> test_config_where;
  // test_configs.by_torch instead of a list: one set per torch MAJOR.MINOR ("2.6"), the one that
  // matches backend.python's torch applies (choose_test_configs in python_versions.h).
  struct ConfigSet {
    std::vector<std::string> patterns, where;
  };
  std::map<std::string, ConfigSet> test_config_sets;
  std::string test_config_sets_where;  // "file:line:col" of by_torch
  std::string workspace;               // absolute
  RunSettings run;
  GatePolicy gate;
  ReportSettings report;
  SelectSettings select;
  AttributeSettings attribute;
};

struct BackendConfigResult {
  std::optional<BackendConfig> config;  // set when there are no errors
  std::vector<std::string> errors;      // "file:line:col: yaml.path: message"
};

// Looks an environment variable up; nullopt when it is unset or empty. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env(const std::string& name);

BackendConfigResult load_backend_config(const std::string& path,
                                        EnvLookup environment = process_env);

}  // namespace ootci
