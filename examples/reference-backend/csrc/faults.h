// Fault switches of the reference backend. They let tests create the failures a real device has:
// missing ops, wrong numerics, crashes and hangs. All are read once, from the environment.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

namespace ootci_ref {

// Raises NotImplementedError, SIGSEGV or hangs when `op` is switched off, crashes or hangs.
void check_op_allowed(const c10::OperatorHandle& op);

// Makes the outputs on `stack` wrong when a numeric bug is injected for this op and dtype.
void apply_numeric_bugs(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace ootci_ref
