#pragma once
// A device pool's admission for the run's workers (run.devices, docs/run.md).
#include <condition_variable>
#include <mutex>

namespace ootci {

// A device pool's admission (run.devices): workers' attempts share the pool, a test that needs
// every device waits for the running ones to end and holds it alone. New attempts wait while it
// waits, so it cannot starve. (std::shared_mutex does not promise that.)
class PoolGate {
 public:
  void enter() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
    ++sharing_;
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    --sharing_;
    changed_.notify_all();
  }
  void enter_alone() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_alone_;
    changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
    --waiting_alone_;
    alone_ = true;
  }
  void leave_alone() {
    std::lock_guard<std::mutex> lock(mutex_);
    alone_ = false;
    changed_.notify_all();
  }
  // Holds the pool (shared, or alone) for a scope.
  struct Hold {
    Hold(PoolGate& gate, bool alone) : gate(gate), alone(alone) {
      alone ? gate.enter_alone() : gate.enter();
    }
    ~Hold() { alone ? gate.leave_alone() : gate.leave(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    PoolGate& gate;
    bool alone;
  };

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int sharing_ = 0, waiting_alone_ = 0;
  bool alone_ = false;
};

}  // namespace ootci
