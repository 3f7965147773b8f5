#include "relay/worker_pool.h"

#include <spdlog/spdlog.h>

namespace ootci {

void WorkerPool::start(int threads) {
  running_ = true;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

void WorkerPool::stop() {
  if (!running_.exchange(false)) return;
  wake();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::wake() {
  {
    std::lock_guard lock(mu_);
    seq_++;
  }
  cv_.notify_all();
}

void WorkerPool::loop() {
  while (running_) {
    uint64_t seq;
    {
      std::lock_guard lock(mu_);
      seq = seq_;
    }
    bool did = false;
    try {
      did = work_once_();
    } catch (const std::exception& e) {
      // Leases bring unfinished work back; nothing is lost by carrying on.
      spdlog::error("worker: {}", e.what());
    }
    if (did) continue;
    int64_t wait = 500;
    try {
      wait = idle_wait_ms_();
    } catch (const std::exception&) {
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(wait), [&] { return seq_ != seq || !running_; });
  }
}

}  // namespace ootci
