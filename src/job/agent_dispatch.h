#pragma once
// The agent's intake of one relay dispatch (POST /dispatch, the relay's generic-webhook
// transport): the X-Ootci-Signature-256 check, the body {"event_type", "client_payload"} and the
// gate's decision on it, before anything is queued. The handler and fuzz/agent_dispatch_fuzz.cc
// call this same function.
#include <string>

#include "job/agent_queue.h"
#include "job/gate.h"

namespace ootci {

struct AgentDispatch {
  int status = 0;      // 0 when accepted; 401 for a wrong signature, 400 for an invalid body
  std::string detail;  // why it is refused, naming the field
  GateDecision gate;   // when accepted
  // When accepted, the job to queue: delivery_id, event_type, client_payload, the gate's fields
  // and state (queued or skipped). The caller sets the times.
  AgentJob job;
  bool ok() const { return status == 0; }
};

// `signature` is the X-Ootci-Signature-256 header, checked against `secret` before the body is
// read. Never throws: a client_payload the gate refuses (ootci::Error) is a 400 with its message.
AgentDispatch parse_agent_dispatch(const std::string& secret, const std::string& signature,
                                   const std::string& raw_body, const GatePolicy& policy,
                                   const std::string& device_type,
                                   const BranchHeadResolver& branch_head);

}  // namespace ootci
