#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ootci {

// Threads that repeatedly claim and process leased work from the store. `work_once` returns true
// if it processed something (then it is called again at once); otherwise the thread sleeps until
// woken, or for `idle_wait_ms()` (other replicas may add work we are not woken for).
class WorkerPool {
 public:
  WorkerPool(std::function<bool()> work_once, std::function<int64_t()> idle_wait_ms)
      : work_once_(std::move(work_once)), idle_wait_ms_(std::move(idle_wait_ms)) {}
  ~WorkerPool() { stop(); }

  void start(int threads);
  void stop();
  void wake();

 private:
  void loop();
  std::function<bool()> work_once_;
  std::function<int64_t()> idle_wait_ms_;
  std::atomic<bool> running_{false};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t seq_ = 0;
};

}  // namespace ootci
