#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.h"

extern char** environ;

namespace ootci {

Subprocess Subprocess::spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw Error("spawn: empty argv");
  // Build everything before fork: only async-signal-safe calls are allowed in the child.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) env[k] = v;
  std::vector<std::string> env_strs;
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  int out_fd = -1;
  if (!o.output_file.empty()) {
    out_fd = open(o.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0)
      throw Error(fmt::format("spawn: cannot open {}: {}", o.output_file, strerror(errno)));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("spawn: fork failed: {}", strerror(errno)));
  if (pid == 0) {
    if (o.new_process_group) setpgid(0, 0);
    // If the parent died before prctl took effect, nobody would send the signal: exit now.
    if (o.die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
      _exit(125);
    if (out_fd >= 0) {
      dup2(out_fd, 1);
      dup2(out_fd, 2);
    }
    if (o.stdout_fd >= 0) dup2(o.stdout_fd, 1);
    if (o.stderr_fd >= 0) dup2(o.stderr_fd, 2);
    int input = open(o.input_file.empty() ? "/dev/null" : o.input_file.c_str(), O_RDONLY);
    if (input < 0 && !o.input_file.empty()) _exit(126);
    if (input >= 0) dup2(input, 0);
    if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(126);
    for (int fd : o.inherit_fds) fcntl(fd, F_SETFD, 0);
    // Undo signal blocking inherited from the parent (ootci blocks SIGTERM for its waiter thread).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (out_fd >= 0) close(out_fd);
  Subprocess p;
  p.pid_ = pid;
  p.group_ = o.new_process_group;
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept {
  *this = std::move(other);
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(group_, other.group_);
  std::swap(status_, other.status_);
  std::swap(pidfd_, other.pidfd_);
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) {
    signal(SIGKILL);
    wait();
  }
  if (pidfd_ >= 0) close(pidfd_);
}

void Subprocess::await_exit(int timeout_ms) {
  if (status_ || pid_ <= 0) return;
  // The raw syscall: glibc 2.36's <sys/pidfd.h> lacks extern "C" for C++.
  if (pidfd_ < 0) pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) {  // a kernel without pidfd_open (before Linux 5.3): just wait
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return;
  }
  pollfd p{pidfd_, POLLIN, 0};
  poll(&p, 1, timeout_ms);
}

void Subprocess::signal(int sig) {
  if (pid_ <= 0 || status_) return;
  if (group_) ::kill(-pid_, sig);
  ::kill(pid_, sig);
}

void Subprocess::kill_group() {
  if (pid_ > 0 && group_) ::kill(-pid_, SIGKILL);
}

std::optional<int> Subprocess::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) == pid_) status_ = st;
  return status_;
}

int Subprocess::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(-1);
  int st = 0;
  while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  status_ = st;
  return st;
}

CapturedRun run_captured(SpawnOptions options, int64_t timeout_ms) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw Error(fmt::format("pipe: {}", strerror(errno)));
  }
  options.output_file.clear();
  options.stdout_fd = out_pipe[1];
  options.stderr_fd = err_pipe[1];
  std::optional<Subprocess> child;
  try {
    child.emplace(Subprocess::spawn(options));
  } catch (...) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    throw;
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CapturedRun r;
  // Both pipes are drained together, so a child filling one while we block on the other cannot
  // deadlock.
  std::array<pollfd, 2> fds = {pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout_ms > 0 && !r.timed_out) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        r.timed_out = true;
        child->kill_group();
        child->signal(SIGKILL);
        continue;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1000));
    }
    if (poll(fds.data(), fds.size(), wait_ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const auto& p : fds)
    if (p.fd >= 0) close(p.fd);
  int status = child->wait();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string output_or_empty(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  o.new_process_group = false;
  try {
    CapturedRun r = run_captured(o);
    if (!r.ok()) return "";
    while (!r.out.empty() && std::isspace(static_cast<unsigned char>(r.out.back())))
      r.out.pop_back();
    return r.out;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace ootci
