#include "run/fork_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_text.h"

namespace ootci {

namespace {

// The server's end of a fresh socket pair goes into its environment; ours stays close-on-exec.
Subprocess start_server(SpawnOptions options, int& our_end) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw Error(fmt::format("fork server: socketpair: {}", strerror(errno)));
  options.env["OOTCI_FORK_SERVER_FD"] = std::to_string(ends[1]);
  options.inherit_fds.push_back(ends[1]);
  try {
    Subprocess server = Subprocess::spawn(options);
    close(ends[1]);
    our_end = ends[0];
    return server;
  } catch (...) {
    close(ends[0]);
    close(ends[1]);
    throw;
  }
}

}  // namespace

ForkServer::ForkServer(SpawnOptions server)
    : server_(start_server(server, socket_)), log_path_(server.output_file) {}

ForkServer::~ForkServer() {
  if (socket_ >= 0) close(socket_);  // EOF: the server finishes its session and exits
  server_.signal(SIGKILL);           // no need to wait for that
  server_.wait();
}

void ForkServer::give_up(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  server_.signal(SIGKILL);
}

ForkServer::Read ForkServer::read_line(int timeout_ms, std::string& line) {
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return Read::kLine;
    }
    pollfd p{socket_, POLLIN, 0};
    int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::kNone;
    char buf[4096];
    ssize_t got = read(socket_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Read::kClosed;
    pending_.append(buf, static_cast<size_t>(got));
    timeout_ms = 0;  // what is there now, no more waiting
  }
}

std::optional<ForkedChild> ForkServer::fork(const std::map<std::string, std::string>& env,
                                            const std::string& log_path, int stall_timeout_s,
                                            const std::atomic<bool>& stop) {
  if (failed()) return std::nullopt;
  using Clock = std::chrono::steady_clock;
  // Collection (imports, torch, the test module) is watched like a spawned pytest's: output
  // keeps it alive, silence for stall_timeout_s ends it.
  Clock::time_point last_activity = Clock::now();
  uintmax_t log_size = file_size_or_zero(log_path_);
  std::string line;
  while (!ready_) {
    if (stop || ended()) return std::nullopt;
    Read r = read_line(50, line);
    if (r == Read::kClosed || server_.try_wait()) {
      status_ = server_.wait();
      return std::nullopt;
    }
    if (r == Read::kLine) {
      nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
      ready_ = reply.is_object() && reply.contains("ready");
      // The server saw the backend start processes its children would share (a device daemon).
      if (ready_ && reply.contains("fork_unsafe") && reply["fork_unsafe"].is_string()) {
        give_up(reply["fork_unsafe"].get<std::string>());
        return std::nullopt;
      }
      continue;
    }
    uintmax_t size = file_size_or_zero(log_path_);
    if (size != log_size) last_activity = Clock::now();
    log_size = size;
    if (std::chrono::duration<double>(Clock::now() - last_activity).count() > stall_timeout_s) {
      stalled_ = true;
      server_.signal(SIGKILL);
      server_.wait();
      return std::nullopt;
    }
  }
  std::string request = nlohmann::json{{"env", env}, {"log", log_path}}.dump() + "\n";
  if (send(socket_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    give_up(fmt::format("the fork server took no request: {}", strerror(errno)));
    return std::nullopt;
  }
  // The fork itself takes milliseconds; a server that cannot fork has failed.
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 100) {
    Read r = read_line(100, line);
    if (r == Read::kClosed) break;
    if (r == Read::kNone) continue;
    nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
    if (reply.is_object() && reply.contains("pid") && reply["pid"].is_number_integer())
      return ForkedChild(this, reply["pid"].get<pid_t>());
    break;
  }
  give_up("the fork server did not fork");
  return std::nullopt;
}

std::optional<int> ForkedChild::try_wait() {
  if (status_) return status_;
  std::string line;
  switch (server_->read_line(0, line)) {
    case ForkServer::Read::kNone:
      return std::nullopt;
    case ForkServer::Read::kClosed:
      // The server died; its children die with it (PR_SET_PDEATHSIG). The next attempt starts
      // a new server.
      server_->status_ = server_->server_.wait();
      status_ = SIGKILL;  // as waitpid reports a SIGKILL
      return status_;
    case ForkServer::Read::kLine:
      break;
  }
  nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
  if (reply.is_object() && reply.contains("exit") && reply["exit"] == pid_ &&
      reply.contains("status") && reply["status"].is_number_integer())
    status_ = reply["status"].get<int>();
  return status_;
}

int ForkedChild::wait() {
  while (!try_wait()) await_exit(100);
  return *status_;
}

void ForkedChild::await_exit(int timeout_ms) {
  if (status_) return;
  pollfd p{server_->socket_, POLLIN, 0};
  poll(&p, 1, timeout_ms);
}

void ForkedChild::signal(int sig) {
  if (status_) return;
  ::kill(-pid_, sig);
  ::kill(pid_, sig);
}

void ForkedChild::kill_group() {
  ::kill(-pid_, SIGKILL);
}

}  // namespace ootci
