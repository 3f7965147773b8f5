#include "cli/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "run/runner.h"

namespace ootci {
namespace {

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void block_stop_signals() {
  sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void serve_until_stop_signal(const std::function<void()>& serve,
                             const std::function<void()>& stop) {
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    sigset_t set = stop_set();
    int sig = 0;
    sigwait(&set, &sig);
    if (served) return;  // woken below because serve returned on its own
    spdlog::info("signal {}: shutting down", sig);
    stop();
  });
  try {
    serve();
  } catch (...) {
    served = true;
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    throw;
  }
  served = true;
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
}

namespace {
std::atomic<bool> g_stop_signalled{false};
}  // namespace

const std::atomic<bool>& stop_runs_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop_signalled = true; };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return g_stop_signalled;
}

}  // namespace ootci
