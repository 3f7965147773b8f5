#pragma once
// `agent.yaml`: the self-hosted agent's listener, queue and job settings (docs/dispatch.md).
#include <string>
#include <vector>

namespace ootci {

struct AgentConfig {
  std::string path;  // the file it came from, for messages
  std::string listen = "127.0.0.1:8090";
  std::string secret_env = "OOTCI_AGENT_SECRET";  // HMAC key of X-Ootci-Signature-256
  std::string backend;                            // ootci.yaml, absolute
  std::string state = "agent.db";                 // the durable queue (SQLite), absolute
  std::string jobs_dir;                           // per-job logs; default <state folder>/agent-jobs
  int concurrency = 1;                            // jobs at a time
  std::string job_name = "ootci-agent";           // workflow.job_name in callbacks
  // Run before each job's tests with OOTCI_UPSTREAM_SHA and OOTCI_PR_NUMBER set, for example to
  // check out upstream at that SHA or build the backend; a failure concludes the job `failure`.
  std::vector<std::string> prepare_command;
  std::string public_url;  // where /jobs/<id> is reachable, for workflow.url; default http://listen
  // A red run is attributed (`ootci attribute`, docs/attribute.md) before the completed
  // callback, which then carries its triage_verdict.
  bool attribute = false;

  std::string listen_host() const;
  int listen_port() const;
};

// Relative paths are resolved against the file's folder. Errors name file:line:col and the key.
AgentConfig load_agent_config(const std::string& path);

}  // namespace ootci
