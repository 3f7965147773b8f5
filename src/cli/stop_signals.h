#pragma once
// SIGTERM/SIGINT handling for the long-running commands (`relay serve`, `agent`, and the ones
// that run tests: `run`, `discover`, `attribute`).
#include <atomic>
#include <functional>

namespace ootci {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later, so only the
// waiter of serve_until_stop_signal receives them. Call before any thread starts.
void block_stop_signals();

// Runs `serve` on this thread. A SIGTERM or SIGINT calls `stop` from a waiter thread, which must
// make `serve` return. The waiter is joined before this returns, so `stop` never outlives what
// it stops.
void serve_until_stop_signal(const std::function<void()>& serve, const std::function<void()>& stop);

// SIGTERM and SIGINT set the flag this returns, for the command to pass to its runs
// (RunRequest::stop): the runner kills its test processes and marks the run interrupted,
// resumable with --resume. A signal handler can reach only a global, so the flag lives here, at
// the process's edge, and nowhere else.
const std::atomic<bool>& stop_runs_on_signal();

}  // namespace ootci
