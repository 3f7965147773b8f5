// The GitHub stand-in's git model, pull requests and App webhook deliveries: what
// `ootci relay sync-levels`, the demotion reconcile and the redelivery of webhooks talk to.
#include <fmt/format.h>

#include "base/sha256.h"
#include "base/time.h"
#include "net/crypto.h"
#include "net/http_client.h"
#include "testing/github_standin.h"

namespace ootci {
namespace {

void git_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"message", message}}.dump(), "application/json");
}

std::string blob_sha(const std::string& content) {
  return sha256_hex(content).substr(0, 40);
}

// "2026-12-05T10:00:00Z", as GitHub writes times.
std::string github_time(int64_t ms) {
  return iso8601_utc(ms).substr(0, 19) + "Z";
}

}  // namespace

std::string GitHubStandin::token_repo(const httplib::Request& req) const {
  std::string auth = req.get_header_value("Authorization");
  std::lock_guard lock(mu_);
  auto it = tokens_.find(auth.rfind("token ", 0) == 0 ? auth.substr(6) : "");
  return it == tokens_.end() ? "" : it->second;
}

std::string GitHubStandin::new_commit(std::map<std::string, std::string> files) {
  std::string sha = fmt::format("{:040x}", 0xc0ffee0000 + next_commit_++);
  git_commits_[sha] = {std::move(files)};
  return sha;
}

std::string GitHubStandin::resolve(const RepoModel& repo, const std::string& ref) const {
  auto b = repo.branches.find(ref.empty() ? "main" : ref);
  if (b != repo.branches.end()) return b->second;
  return git_commits_.count(ref) ? ref : "";
}

std::string GitHubStandin::commit_file(const std::string& repo, const std::string& branch,
                                       const std::string& path, const std::string& content) {
  std::lock_guard lock(mu_);
  RepoModel& r = repos_[repo];
  std::string base = resolve(r, branch);
  if (base.empty()) base = resolve(r, "main");
  auto files = base.empty() ? std::map<std::string, std::string>{} : git_commits_[base].files;
  files[path] = content;
  std::string sha = new_commit(std::move(files));
  if (!r.branches.count(branch)) r.fork_points[branch] = base.empty() ? sha : base;
  r.branches[branch] = sha;
  return sha;
}

std::optional<std::string> GitHubStandin::file_at(const std::string& repo,
                                                  const std::string& branch,
                                                  const std::string& path) const {
  std::lock_guard lock(mu_);
  auto r = repos_.find(repo);
  if (r == repos_.end()) return std::nullopt;
  auto b = r->second.branches.find(branch);
  if (b == r->second.branches.end()) return std::nullopt;
  const auto& files = git_commits_.at(b->second).files;
  auto f = files.find(path);
  if (f == files.end()) return std::nullopt;
  return f->second;
}

bool GitHubStandin::has_branch(const std::string& repo, const std::string& branch) const {
  std::lock_guard lock(mu_);
  auto r = repos_.find(repo);
  return r != repos_.end() && r->second.branches.count(branch);
}

std::vector<StandinPull> GitHubStandin::pulls(const std::string& repo) const {
  std::lock_guard lock(mu_);
  auto r = repos_.find(repo);
  return r == repos_.end() ? std::vector<StandinPull>{} : r->second.pulls;
}

void GitHubStandin::set_pull_state(const std::string& repo, int64_t number,
                                   const std::string& state) {
  std::lock_guard lock(mu_);
  for (auto& p : repos_[repo].pulls)
    if (p.number == number) p.state = state;
}

// As GitHub judges it: the head branch changed files since it was created (or reset); if the
// base branch changed any of them since then too, the PR conflicts.
bool GitHubStandin::mergeable(const RepoModel& repo, const StandinPull& pr) const {
  auto head = repo.branches.find(pr.head);
  auto fork = repo.fork_points.find(pr.head);
  auto base = repo.branches.find(pr.base);
  if (head == repo.branches.end() || fork == repo.fork_points.end() || base == repo.branches.end())
    return false;
  const auto& at_fork = git_commits_.at(fork->second).files;
  const auto& on_head = git_commits_.at(head->second).files;
  const auto& on_base = git_commits_.at(base->second).files;
  auto get = [](const std::map<std::string, std::string>& files, const std::string& path) {
    auto it = files.find(path);
    return it == files.end() ? std::optional<std::string>() : std::optional(it->second);
  };
  for (const auto& [path, content] : on_head)
    if (get(at_fork, path) != content && get(on_base, path) != get(at_fork, path)) return false;
  return true;
}

nlohmann::json GitHubStandin::pull_json(const std::string& repo, const StandinPull& pr) const {
  const RepoModel& r = repos_.at(repo);
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& l : pr.labels) labels.push_back({{"name", l}});
  std::string owner = repo.substr(0, repo.find('/'));
  return {{"number", pr.number},
          {"html_url", fmt::format("https://github.com/{}/pull/{}", repo, pr.number)},
          {"state", pr.state},
          {"title", pr.title},
          {"body", pr.body},
          {"user", {{"login", pr.user}}},
          {"labels", labels},
          {"head", {{"ref", pr.head}, {"label", owner + ":" + pr.head}}},
          {"base", {{"ref", pr.base}}},
          {"mergeable", pr.state == "open" ? nlohmann::json(mergeable(r, pr)) : nullptr}};
}

void GitHubStandin::register_git_routes() {
  // Each handler checks the installation token of the repo it is for, then works under mu_.
  auto with_repo = [this](auto handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      std::string repo = req.matches[1];
      if (token_repo(req) != repo) return git_error(res, 401, "Bad credentials");
      std::lock_guard lock(mu_);
      handler(req, res, repo, repos_[repo]);
    };
  };
  server_.Get(R"(/repos/([^/]+/[^/]+)/contents/(.+))",
              [this](const httplib::Request& req, httplib::Response& res) {
                // Anyone may read (CRCR reads the allowlist unauthenticated).
                std::string repo = req.matches[1], path = req.matches[2];
                std::lock_guard lock(mu_);
                file_requests_++;
                std::string sha = resolve(repos_[repo], req.get_param_value("ref"));
                if (sha.empty() || !git_commits_[sha].files.count(path))
                  return git_error(res, 404, "Not Found");
                const std::string& content = git_commits_[sha].files[path];
                if (req.get_header_value("Accept") == "application/vnd.github.raw")
                  return res.set_content(content, "application/vnd.github.raw");
                // GitHub wraps its base64 at 60 columns.
                std::string b64 = base64_encode(content), wrapped;
                for (size_t i = 0; i < b64.size(); i += 60) wrapped += b64.substr(i, 60) + "\n";
                res.set_content(nlohmann::json{{"type", "file"},
                                               {"path", path},
                                               {"sha", blob_sha(content)},
                                               {"encoding", "base64"},
                                               {"content", wrapped}}
                                    .dump(),
                                "application/json");
              });
  server_.Put(R"(/repos/([^/]+/[^/]+)/contents/(.+))",
              with_repo([this](const httplib::Request& req, httplib::Response& res,
                               const std::string&, RepoModel& r) {
                auto body = nlohmann::json::parse(req.body, nullptr, false);
                std::string path = req.matches[2];
                std::string branch = body.value("branch", "main");
                std::string head = resolve(r, branch);
                auto decoded = base64url_decode(body.value("content", ""));
                if (head.empty() || !decoded) return git_error(res, 422, "Invalid request");
                auto files = git_commits_[head].files;
                if (files.count(path) && body.value("sha", "") != blob_sha(files[path]))
                  return git_error(res, 409, "sha does not match");
                files[path] = *decoded;
                r.branches[branch] = new_commit(std::move(files));
                res.status = 200;
                res.set_content(nlohmann::json{{"commit", {{"sha", r.branches[branch]}}}}.dump(),
                                "application/json");
              }));
  server_.Get(R"(/repos/([^/]+/[^/]+)/git/ref/heads/(.+))",
              with_repo([](const httplib::Request& req, httplib::Response& res, const std::string&,
                           RepoModel& r) {
                auto b = r.branches.find(req.matches[2]);
                if (b == r.branches.end()) return git_error(res, 404, "Not Found");
                res.set_content(nlohmann::json{{"ref", "refs/heads/" + b->first},
                                               {"object", {{"sha", b->second}}}}
                                    .dump(),
                                "application/json");
              }));
  server_.Post(R"(/repos/([^/]+/[^/]+)/git/refs)",
               with_repo([this](const httplib::Request& req, httplib::Response& res,
                                const std::string&, RepoModel& r) {
                 auto body = nlohmann::json::parse(req.body, nullptr, false);
                 std::string ref = body.value("ref", ""), sha = body.value("sha", "");
                 if (ref.rfind("refs/heads/", 0) != 0 || !git_commits_.count(sha))
                   return git_error(res, 422, "Invalid request");
                 std::string branch = ref.substr(11);
                 if (r.branches.count(branch))
                   return git_error(res, 422, "Reference already exists");
                 r.branches[branch] = r.fork_points[branch] = sha;
                 res.status = 201;
                 res.set_content(nlohmann::json{{"ref", ref}}.dump(), "application/json");
               }));
  server_.Patch(
      R"(/repos/([^/]+/[^/]+)/git/refs/heads/(.+))",
      with_repo([this](const httplib::Request& req, httplib::Response& res, const std::string&,
                       RepoModel& r) {
        auto body = nlohmann::json::parse(req.body, nullptr, false);
        std::string branch = req.matches[2], sha = body.value("sha", "");
        if (!r.branches.count(branch)) return git_error(res, 422, "Reference does not exist");
        if (!git_commits_.count(sha) || !body.value("force", false))
          return git_error(res, 422, "Update is not a fast forward");
        r.branches[branch] = r.fork_points[branch] = sha;
        res.set_content(nlohmann::json{{"ref", "refs/heads/" + branch}}.dump(), "application/json");
      }));
  server_.Delete(R"(/repos/([^/]+/[^/]+)/git/refs/heads/(.+))",
                 with_repo([](const httplib::Request& req, httplib::Response& res,
                              const std::string&, RepoModel& r) {
                   if (!r.branches.erase(req.matches[2]))
                     return git_error(res, 422, "Reference does not exist");
                   res.status = 204;
                 }));
  server_.Post(R"(/repos/([^/]+/[^/]+)/pulls)",
               with_repo([this](const httplib::Request& req, httplib::Response& res,
                                const std::string& repo, RepoModel& r) {
                 auto body = nlohmann::json::parse(req.body, nullptr, false);
                 StandinPull pr;
                 pr.head = body.value("head", "");
                 pr.base = body.value("base", "");
                 pr.title = body.value("title", "");
                 pr.body = body.value("body", "");
                 pr.user = app_slug() + "[bot]";
                 if (!r.branches.count(pr.head) || !r.branches.count(pr.base))
                   return git_error(res, 422, "Validation Failed");
                 for (const auto& p : r.pulls)
                   if (p.state == "open" && p.head == pr.head)
                     return git_error(res, 422, "A pull request already exists for " + pr.head);
                 pr.number = 100 + static_cast<int64_t>(r.pulls.size());
                 r.pulls.push_back(pr);
                 res.status = 201;
                 res.set_content(pull_json(repo, pr).dump(), "application/json");
               }));
  server_.Get(R"(/repos/([^/]+/[^/]+)/pulls)",
              with_repo([this](const httplib::Request& req, httplib::Response& res,
                               const std::string& repo, RepoModel& r) {
                std::string state = req.has_param("state") ? req.get_param_value("state") : "open";
                std::string head = req.get_param_value("head");  // owner:branch
                nlohmann::json out = nlohmann::json::array();
                for (const auto& p : r.pulls) {
                  if (state != "all" && p.state != state) continue;
                  if (!head.empty() && head != repo.substr(0, repo.find('/')) + ":" + p.head)
                    continue;
                  out.push_back(pull_json(repo, p));
                }
                res.set_content(out.dump(), "application/json");
              }));
  auto find_pull = [](RepoModel& r, const std::string& n) -> StandinPull* {
    for (auto& p : r.pulls)
      if (std::to_string(p.number) == n) return &p;
    return nullptr;
  };
  server_.Get(R"(/repos/([^/]+/[^/]+)/pulls/(\d+))",
              with_repo([this, find_pull](const httplib::Request& req, httplib::Response& res,
                                          const std::string& repo, RepoModel& r) {
                StandinPull* p = find_pull(r, req.matches[2]);
                if (!p) return git_error(res, 404, "Not Found");
                res.set_content(pull_json(repo, *p).dump(), "application/json");
              }));
  server_.Patch(R"(/repos/([^/]+/[^/]+)/pulls/(\d+))",
                with_repo([this, find_pull](const httplib::Request& req, httplib::Response& res,
                                            const std::string& repo, RepoModel& r) {
                  StandinPull* p = find_pull(r, req.matches[2]);
                  if (!p) return git_error(res, 404, "Not Found");
                  auto body = nlohmann::json::parse(req.body, nullptr, false);
                  if (body.contains("state")) p->state = body["state"];
                  if (body.contains("body")) p->body = body["body"];
                  res.set_content(pull_json(repo, *p).dump(), "application/json");
                }));
  // Issues: the pull requests, as GitHub's issues API lists them (with a pull_request key).
  server_.Get(R"(/repos/([^/]+/[^/]+)/issues)",
              with_repo([this](const httplib::Request& req, httplib::Response& res,
                               const std::string& repo, RepoModel& r) {
                std::string state = req.has_param("state") ? req.get_param_value("state") : "open";
                std::string label = req.get_param_value("labels");
                nlohmann::json out = nlohmann::json::array();
                for (const auto& p : r.pulls) {
                  if (state != "all" && p.state != state) continue;
                  if (!label.empty() &&
                      std::find(p.labels.begin(), p.labels.end(), label) == p.labels.end())
                    continue;
                  nlohmann::json issue = pull_json(repo, p);
                  issue["pull_request"] = {{"url", "pulls/" + std::to_string(p.number)}};
                  out.push_back(issue);
                }
                res.set_content(out.dump(), "application/json");
              }));
  server_.Post(R"(/repos/([^/]+/[^/]+)/issues/(\d+)/labels)",
               with_repo([find_pull](const httplib::Request& req, httplib::Response& res,
                                     const std::string&, RepoModel& r) {
                 StandinPull* p = find_pull(r, req.matches[2]);
                 if (!p) return git_error(res, 404, "Not Found");
                 auto body = nlohmann::json::parse(req.body, nullptr, false);
                 nlohmann::json all = nlohmann::json::array();
                 for (const auto& l : body.value("labels", nlohmann::json::array()))
                   if (std::find(p->labels.begin(), p->labels.end(), l) == p->labels.end())
                     p->labels.push_back(l);
                 for (const auto& l : p->labels) all.push_back({{"name", l}});
                 res.set_content(all.dump(), "application/json");
               }));
  server_.Post(
      R"(/repos/([^/]+/[^/]+)/issues/(\d+)/comments)",
      with_repo([find_pull](const httplib::Request& req, httplib::Response& res, const std::string&,
                            RepoModel& r) {
        StandinPull* p = find_pull(r, req.matches[2]);
        if (!p) return git_error(res, 404, "Not Found");
        p->comments.push_back(nlohmann::json::parse(req.body, nullptr, false).value("body", ""));
        res.status = 201;
        res.set_content(R"({"id": 1})", "application/json");
      }));
  server_.Get("/app", [this](const httplib::Request& req, httplib::Response& res) {
    std::string why;
    if (!app_jwt_ok(req, &why)) return git_error(res, 401, why);
    res.set_content(nlohmann::json{{"id", app_id_}, {"slug", app_slug()}}.dump(),
                    "application/json");
  });
}

void GitHubStandin::set_app_webhook(const std::string& url, const std::string& secret) {
  std::lock_guard lock(mu_);
  app_hook_url_ = url;
  app_hook_secret_ = secret;
}

int GitHubStandin::deliver_webhook(const std::string& event, const std::string& guid,
                                   const std::string& body) {
  std::string url, secret;
  bool redelivery = false;
  {
    std::lock_guard lock(mu_);
    url = app_hook_url_;
    secret = app_hook_secret_;
    for (const auto& d : hook_deliveries_) redelivery = redelivery || d.guid == guid;
  }
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  req.body = body;
  req.timeout_ms = 10000;  // GitHub gives up on a delivery after 10 s
  req.headers = {{"X-GitHub-Event", event},
                 {"X-GitHub-Delivery", guid},
                 {"X-Hub-Signature-256", github_signature(secret, body)}};
  HttpResult r = http_send(req);
  auto payload = nlohmann::json::parse(body, nullptr, false);
  std::string action = payload.is_object() ? payload.value("action", "") : "";
  std::lock_guard lock(mu_);
  hook_deliveries_.push_back({static_cast<int64_t>(hook_deliveries_.size()) + 1, guid, event,
                              action, r.status, now_ms(), redelivery, body});
  return r.status;
}

std::vector<StandinHookDelivery> GitHubStandin::hook_deliveries() const {
  std::lock_guard lock(mu_);
  return hook_deliveries_;
}

void GitHubStandin::record_hook_delivery(StandinHookDelivery d) {
  std::lock_guard lock(mu_);
  d.id = static_cast<int64_t>(hook_deliveries_.size()) + 1;
  hook_deliveries_.push_back(std::move(d));
}

int GitHubStandin::redelivery_requests() const {
  std::lock_guard lock(mu_);
  return redelivery_requests_;
}

void GitHubStandin::register_hook_routes() {
  // Newest first, per_page at a time; the Link header's cursor is where the next page starts.
  server_.Get("/app/hook/deliveries", [this](const httplib::Request& req, httplib::Response& res) {
    std::string why;
    if (!app_jwt_ok(req, &why)) return git_error(res, 401, why);
    size_t per_page = req.has_param("per_page") ? std::stoul(req.get_param_value("per_page")) : 30;
    std::string cursor = req.get_param_value("cursor");
    int64_t below = cursor.rfind("v1_", 0) == 0 ? std::stoll(cursor.substr(3)) : INT64_MAX;
    std::lock_guard lock(mu_);
    nlohmann::json out = nlohmann::json::array();
    int64_t last = 0;
    bool more = false;
    for (auto it = hook_deliveries_.rbegin(); it != hook_deliveries_.rend(); ++it) {
      if (it->id >= below) continue;
      if (out.size() == per_page) {
        more = true;
        break;
      }
      out.push_back(
          {{"id", it->id},
           {"guid", it->guid},
           {"delivered_at", github_time(it->delivered_ms)},
           {"redelivery", it->redelivery},
           {"duration", 0.1},
           {"status", it->status_code == 0                              ? "failed"
                      : it->status_code >= 200 && it->status_code < 300 ? "OK"
                                                                        : "failed"},
           {"status_code", it->status_code},
           {"event", it->event},
           {"action", it->action.empty() ? nlohmann::json(nullptr) : nlohmann::json(it->action)},
           {"installation_id", 1},
           {"repository_id", 1}});
      last = it->id;
    }
    if (more)
      res.set_header("Link",
                     fmt::format(R"(<{}/app/hook/deliveries?per_page={}&cursor=v1_{}>; rel="next")",
                                 url(), per_page, last));
    res.set_content(out.dump(), "application/json");
  });
  server_.Post(R"(/app/hook/deliveries/(\d+)/attempts)", [this](const httplib::Request& req,
                                                                httplib::Response& res) {
    std::string why;
    if (!app_jwt_ok(req, &why)) return git_error(res, 401, why);
    int64_t id = std::stoll(req.matches[1]);
    std::lock_guard lock(mu_);
    auto it = std::find_if(hook_deliveries_.begin(), hook_deliveries_.end(),
                           [&](const auto& d) { return d.id == id; });
    if (it == hook_deliveries_.end()) return git_error(res, 404, "Not Found");
    redelivery_requests_++;
    // GitHub answers at once and redelivers shortly after.
    redeliveries_.emplace_back([this, d = *it] { deliver_webhook(d.event, d.guid, d.body); });
    res.status = 202;
    res.set_content("{}", "application/json");
  });
}

}  // namespace ootci
