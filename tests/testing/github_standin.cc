#include "testing/github_standin.h"

#include <fmt/format.h>

#include "base/time.h"
#include "net/crypto.h"
#include "net/jwt.h"
#include "net/listen_backlog.h"

namespace ootci {
namespace {

void json_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"message", message}}.dump(), "application/json");
}

int64_t installation_id_for(const std::string& repo) {
  return static_cast<int64_t>(std::hash<std::string>{}(repo) % 1000000000) + 1;
}

}  // namespace

GitHubStandin::GitHubStandin(int64_t app_id, std::string public_key_pem)
    : app_id_(app_id), public_key_pem_(std::move(public_key_pem)) {}

GitHubStandin::~GitHubStandin() {
  stop();
}

std::string GitHubStandin::url() const {
  return fmt::format("http://127.0.0.1:{}", port_);
}

bool GitHubStandin::app_jwt_ok(const httplib::Request& req, std::string* why) const {
  std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) != 0) {
    *why = "A JSON web token could not be decoded";
    return false;
  }
  auto parts = jwt_decode(auth.substr(7));
  if (!parts || !jwt_verify_rs256(*parts, public_key_pem_)) {
    *why = "A JSON web token could not be decoded";
    return false;
  }
  int64_t now = now_s();
  if (parts->claims.value("iss", "") != std::to_string(app_id_)) {
    *why = "'Issuer' claim ('iss') must be the App ID";
    return false;
  }
  if (parts->claims.value("exp", int64_t{0}) < now ||
      parts->claims.value("iat", now + 1) > now + 60 ||
      parts->claims.value("exp", int64_t{0}) - parts->claims.value("iat", int64_t{0}) > 600) {
    *why = "'Expiration time' claim ('exp') is too far in the future or expired";
    return false;
  }
  return true;
}

bool GitHubStandin::apply_fault(const std::string& target, httplib::Response& res) {
  Fault f;
  bool have = false;
  int hang = 0;
  {
    std::lock_guard lock(mu_);
    dispatch_requests_[target]++;
    auto it = faults_.find(target);
    if (it != faults_.end() && !it->second.empty()) {
      f = it->second.front();
      it->second.pop_front();
      have = true;
    }
    hang = hang_all_ms_;
  }
  if (hang > 0) {
    // A hung request is never recorded: its client has given up (or died) by the time we answer.
    std::this_thread::sleep_for(std::chrono::milliseconds(hang));
    json_error(res, 503, "hung");
    return true;
  }
  if (!have) return false;
  if (f.hang_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(f.hang_ms));
  if (f.retry_after_s >= 0) res.set_header("Retry-After", std::to_string(f.retry_after_s));
  json_error(res, f.status, "injected fault");
  return true;
}

bool GitHubStandin::apply_profile(httplib::Response& res, int* late_ms) {
  TargetProfile p;
  uint64_t r1, r2;
  {
    std::lock_guard lock(mu_);
    p = profile_;
    r1 = rng_();
    r2 = rng_();
  }
  if (p.latency_ms > 0)
    std::this_thread::sleep_for(
        std::chrono::milliseconds(p.latency_ms / 2 + static_cast<int>(r1 % (p.latency_ms + 1))));
  double u = (r2 >> 11) * 0x1.0p-53;
  if (u < p.error_rate) {
    json_error(res, 500 + static_cast<int>(r1 % 4), "injected server error");
    return true;
  }
  *late_ms = u < p.error_rate + p.timeout_rate ? p.timeout_ms : 0;
  return false;
}

void GitHubStandin::set_profile(const TargetProfile& profile) {
  std::lock_guard lock(mu_);
  profile_ = profile;
  rng_.seed(profile.seed);  // the same draws for the same seed
}

void GitHubStandin::record(RecordedDispatch d) {
  {
    std::lock_guard lock(mu_);
    dispatches_.push_back(std::move(d));
  }
  cv_.notify_all();
}

void GitHubStandin::start(int port) {
  // Enough threads for 64 dispatch workers and as many task workers waiting out 300 ms latency.
  server_.new_task_queue = [] { return new httplib::ThreadPool(192); };
  server_.set_tcp_nodelay(true);
  server_.Get(R"(/repos/([^/]+/[^/]+)/installation)", [this](const httplib::Request& req,
                                                             httplib::Response& res) {
    std::string why;
    if (!app_jwt_ok(req, &why)) return json_error(res, 401, why);
    std::string repo = req.matches[1];
    std::lock_guard lock(mu_);
    if (uninstalled_.count(repo)) return json_error(res, 404, "Not Found");
    int64_t id = installation_id_for(repo);
    installations_[id] = repo;
    res.set_content(nlohmann::json{{"id", id}, {"app_id", app_id_}}.dump(), "application/json");
  });
  server_.Post(R"(/app/installations/(\d+)/access_tokens)", [this](const httplib::Request& req,
                                                                   httplib::Response& res) {
    std::string why;
    if (!app_jwt_ok(req, &why)) return json_error(res, 401, why);
    int64_t id = std::stoll(req.matches[1]);
    std::lock_guard lock(mu_);
    auto it = installations_.find(id);
    if (it == installations_.end()) return json_error(res, 404, "Not Found");
    std::string token = "ghs_" + random_hex(18);
    tokens_[token] = it->second;
    token_requests_++;
    res.status = 201;
    res.set_content(
        nlohmann::json{{"token", token},
                       {"expires_at", iso8601_utc(now_ms() + 3600000).substr(0, 19) + "Z"}}
            .dump(),
        "application/json");
  });
  server_.Post(R"(/repos/([^/]+/[^/]+)/dispatches)", [this](const httplib::Request& req,
                                                            httplib::Response& res) {
    std::string repo = req.matches[1];
    std::string auth = req.get_header_value("Authorization");
    std::string token = auth.rfind("token ", 0) == 0 ? auth.substr(6) : "";
    {
      std::lock_guard lock(mu_);
      auto it = tokens_.find(token);
      if (it == tokens_.end()) return json_error(res, 401, "Bad credentials");
      if (it->second != repo) return json_error(res, 404, "Not Found");
    }
    int late_ms = 0;
    if (apply_fault(repo, res) || apply_profile(res, &late_ms)) return;
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body["event_type"].is_string() || !body["client_payload"].is_object())
      return json_error(res, 422, "Invalid request");
    if (body["client_payload"].size() > 10)
      return json_error(res, 422, "client_payload has more than 10 top-level properties");
    record({repo, body["event_type"], body["client_payload"], req.body, "", now_ms(), late_ms > 0});
    if (late_ms) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    res.status = 204;
  });
  server_.Post(R"(/hooks/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    std::string name = req.matches[1];
    std::string secret;
    {
      std::lock_guard lock(mu_);
      auto it = hooks_.find(name);
      if (it == hooks_.end()) return json_error(res, 404, "no such hook");
      secret = it->second;
    }
    if (!constant_time_equal(req.get_header_value("X-Ootci-Signature-256"),
                             github_signature(secret, req.body)))
      return json_error(res, 401, "bad signature");
    if (apply_fault(name, res)) return;
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object()) return json_error(res, 400, "invalid JSON");
    record({name, body.value("event_type", ""), body["client_payload"], req.body,
            req.get_header_value("X-Ootci-Delivery"), now_ms()});
    res.status = 202;
  });
  register_git_routes();
  register_hook_routes();
  // Endpoints used by the callback half: authenticated by an installation token of that repo.
  auto token_repo = [this](const httplib::Request& req) { return this->token_repo(req); };
  auto record_call = [this, token_repo](const httplib::Request& req, httplib::Response& res,
                                        const std::string& repo, int ok_status) {
    if (!repo.empty() && token_repo(req) != repo) return json_error(res, 401, "Bad credentials");
    int late_ms = 0;
    if (apply_fault(req.path, res) || apply_profile(res, &late_ms)) return;
    {
      std::lock_guard lock(mu_);
      calls_.push_back({req.path, nlohmann::json::parse(req.body, nullptr, false),
                        repo.empty() ? req.get_header_value("x-hud-internal-bot")
                                     : req.get_header_value("Authorization"),
                        now_ms()});
    }
    cv_.notify_all();
    if (late_ms) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    res.status = ok_status;
    res.set_content(R"({"id": 1})", "application/json");
  };
  server_.Post(R"(/repos/([^/]+/[^/]+)/check-runs)",
               [record_call](const httplib::Request& req, httplib::Response& res) {
                 record_call(req, res, req.matches[1], 201);
               });
  server_.Post(R"(/repos/([^/]+/[^/]+)/actions/runs/(\d+)/(rerun|rerun-failed-jobs))",
               [record_call](const httplib::Request& req, httplib::Response& res) {
                 record_call(req, res, req.matches[1], 201);
               });
  server_.Post("/hud/crcr/results",
               [record_call](const httplib::Request& req, httplib::Response& res) {
                 record_call(req, res, "", 200);
               });
  server_.Get(R"(/repos/([^/]+/[^/]+)/commits/([0-9a-f]+))",
              [this, token_repo](const httplib::Request& req, httplib::Response& res) {
                std::string repo = req.matches[1];
                if (token_repo(req) != repo) return json_error(res, 401, "Bad credentials");
                std::lock_guard lock(mu_);
                if (!commits_.count(repo + "@" + std::string(req.matches[2])))
                  return json_error(res, 422, "No commit found for SHA");
                res.set_content(nlohmann::json{{"sha", std::string(req.matches[2])}}.dump(),
                                "application/json");
              });
  server_.Get("/_standin/calls", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : calls(""))
      out.push_back({{"path", c.path}, {"body", c.body}, {"received_ms", c.received_ms}});
    res.set_content(out.dump(), "application/json");
  });
  server_.Get("/_standin/dispatches", [this](const httplib::Request& req, httplib::Response& res) {
    bool full = req.has_param("full");
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : dispatches())
      out.push_back({{"repo", d.repo},
                     {"client_payload", full ? d.client_payload : nlohmann::json(nullptr)},
                     {"event_type", d.event_type},
                     {"delivery_id", d.client_payload.value("delivery_id", "")},
                     {"client_payload_keys",
                      [&] {
                        nlohmann::json keys = nlohmann::json::array();
                        for (auto it = d.client_payload.begin(); it != d.client_payload.end(); ++it)
                          keys.push_back(it.key());
                        return keys;
                      }()},
                     {"received_ms", d.received_ms}});
    res.set_content(out.dump(), "application/json");
  });
  port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1")
                    : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) throw std::runtime_error("github stand-in: cannot bind");
  raise_listen_backlog(port_);
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

void GitHubStandin::stop() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
  std::vector<std::thread> pending;
  {
    std::lock_guard lock(mu_);
    pending.swap(redeliveries_);
  }
  for (auto& t : pending) t.join();
}

void GitHubStandin::add_hook(const std::string& name, const std::string& secret) {
  std::lock_guard lock(mu_);
  hooks_[name] = secret;
}

void GitHubStandin::set_file(const std::string& repo, const std::string& ref,
                             const std::string& path, const std::string& content) {
  commit_file(repo, ref, path, content);
}

int GitHubStandin::file_requests() const {
  std::lock_guard lock(mu_);
  return file_requests_;
}

void GitHubStandin::add_commit(const std::string& repo, const std::string& sha) {
  std::lock_guard lock(mu_);
  commits_.insert(repo + "@" + sha);
}

std::vector<RecordedCall> GitHubStandin::calls(const std::string& prefix) const {
  std::lock_guard lock(mu_);
  std::vector<RecordedCall> out;
  for (const auto& c : calls_)
    if (c.path.rfind(prefix, 0) == 0) out.push_back(c);
  return out;
}

bool GitHubStandin::wait_for_calls(const std::string& prefix, size_t n, int timeout_ms) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    size_t count = 0;
    for (const auto& c : calls_) count += c.path.rfind(prefix, 0) == 0;
    return count >= n;
  });
}

void GitHubStandin::queue_call_faults(const std::string& prefix, std::vector<Fault> faults) {
  std::lock_guard lock(mu_);
  for (auto& f : faults) faults_[prefix].push_back(f);
}

void GitHubStandin::uninstall(const std::string& repo) {
  std::lock_guard lock(mu_);
  uninstalled_.insert(repo);
}

void GitHubStandin::queue_faults(const std::string& repo, std::vector<Fault> faults) {
  std::lock_guard lock(mu_);
  for (auto& f : faults) faults_[repo].push_back(f);
}

void GitHubStandin::set_hang_all_ms(int ms) {
  std::lock_guard lock(mu_);
  hang_all_ms_ = ms;
}

std::vector<RecordedDispatch> GitHubStandin::dispatches(size_t from) const {
  std::lock_guard lock(mu_);
  if (from >= dispatches_.size()) return {};
  return {dispatches_.begin() + static_cast<std::ptrdiff_t>(from), dispatches_.end()};
}

std::vector<RecordedDispatch> GitHubStandin::dispatches_for(const std::string& repo) const {
  std::lock_guard lock(mu_);
  std::vector<RecordedDispatch> out;
  for (const auto& d : dispatches_)
    if (d.repo == repo) out.push_back(d);
  return out;
}

bool GitHubStandin::wait_for_dispatches(size_t n, int timeout_ms) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return dispatches_.size() >= n; });
}

int GitHubStandin::token_requests() const {
  std::lock_guard lock(mu_);
  return token_requests_;
}

int GitHubStandin::dispatch_requests(const std::string& repo) const {
  std::lock_guard lock(mu_);
  auto it = dispatch_requests_.find(repo);
  return it == dispatch_requests_.end() ? 0 : it->second;
}

}  // namespace ootci
