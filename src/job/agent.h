#pragma once
// `ootci agent`: the self-hosted mode for backends on their own hardware. It receives the relay's
// generic-webhook dispatches, queues them durably, and for each runs gate -> plan -> run -> judge
// -> report, with in_progress and completed from one job identity (docs/dispatch.md).
#include <memory>
#include <string>

#include "job/agent_config.h"
#include "plan/backend_config.h"

namespace ootci {

class Agent {
 public:
  // `ootci_binary` runs each job's tests (`ootci run`) as a child process, so a job can be
  // stopped by its process group and a crash in it cannot take the agent down.
  Agent(AgentConfig config, BackendConfig backend, std::string ootci_binary);
  ~Agent();
  // Binds, requeues jobs a previous agent left running, starts the workers, and serves until
  // stop(). Throws if the port cannot be bound or the secret is not set.
  void run();
  // Stops intake and the workers. Running tests are interrupted, and their jobs stay `running`
  // in the queue, so the next agent resumes them.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ootci
