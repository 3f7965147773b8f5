#include "testing/relay_process.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "base/error.h"
#include "net/crypto.h"
#include "testing/test_env.h"

namespace ootci {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

RelayProcess::RelayProcess(std::string dir, std::string config_yaml, int port,
                           std::map<std::string, std::string> env)
    : dir_(std::move(dir)), port_(port), env_(std::move(env)) {
  write_file(dir_ + "/relay.yaml", config_yaml);
}

RelayProcess::~RelayProcess() {
  kill_hard();
}

std::string RelayProcess::url() const {
  return fmt::format("http://127.0.0.1:{}", port_);
}

std::string RelayProcess::log() const {
  try {
    return read_file(dir_ + "/relay.log");
  } catch (...) {
    return "";
  }
}

void RelayProcess::start() {
  SpawnOptions o;
  o.argv = {binary_dir() + "/ootci", "relay", "serve", "--config", dir_ + "/relay.yaml"};
  o.env = env_;
  o.output_file = dir_ + "/relay.log";
  proc_ = Subprocess::spawn(o);
  for (int i = 0; i < 200; ++i) {
    HttpRequest req;
    req.url = url() + "/healthz";
    req.timeout_ms = 500;
    if (http_send(req).status == 200) return;
    if (proc_->try_wait()) throw Error("relay exited during start-up:\n" + log());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error("relay did not become healthy:\n" + log());
}

void RelayProcess::kill_hard() {
  if (!proc_) return;
  proc_->signal(SIGKILL);
  proc_->wait();
  proc_.reset();
}

void RelayProcess::stop() {
  if (!proc_) return;
  proc_->signal(SIGTERM);
  proc_->wait();
  proc_.reset();
}

HttpResult send_webhook(const std::string& relay_url, const std::string& event,
                        const std::string& delivery, const std::string& body,
                        const std::string& secret) {
  HttpRequest req;
  req.method = "POST";
  req.url = relay_url + "/github/webhook";
  req.body = body;
  req.headers = {{"X-GitHub-Event", event},
                 {"X-GitHub-Delivery", delivery},
                 {"X-Hub-Signature-256", github_signature(secret, body)},
                 {"User-Agent", "GitHub-Hookshot/test"}};
  return http_send(req);
}

}  // namespace ootci
