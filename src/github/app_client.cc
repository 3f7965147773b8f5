#include "github/app_client.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "base/time.h"
#include "net/jwt.h"

namespace ootci {
namespace {

std::multimap<std::string, std::string> api_headers(const std::string& auth) {
  return {{"Authorization", auth},
          {"Accept", "application/vnd.github+json"},
          {"X-GitHub-Api-Version", "2022-11-28"},
          {"User-Agent", "ootci-relay"}};
}

}  // namespace

int64_t parse_github_time(const std::string& text) {
  struct tm tm = {};
  if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return timegm(&tm);
}

GitHubApp::GitHubApp(GitHubAppConfig config) : config_(std::move(config)) {
  while (!config_.api_url.empty() && config_.api_url.back() == '/') config_.api_url.pop_back();
}

std::string GitHubApp::app_jwt(int64_t now_s) const {
  return jwt_sign_rs256(
      {{"iat", now_s - 60}, {"exp", now_s + 540}, {"iss", std::to_string(config_.app_id)}},
      config_.private_key_pem);
}

void GitHubApp::forget_token(const std::string& repo) {
  std::lock_guard lock(mu_);
  tokens_.erase(repo);
}

GitHubApp::TokenResult GitHubApp::installation_token(const std::string& repo) {
  int64_t now = now_s();
  {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(repo);
    if (it != tokens_.end() && now < it->second.refresh_after_s) return {it->second.token, {}};
  }
  std::string bearer = "Bearer " + app_jwt(now);
  HttpRequest lookup;
  lookup.url = config_.api_url + "/repos/" + repo + "/installation";
  lookup.headers = api_headers(bearer);
  lookup.timeout_ms = config_.timeout_ms;
  HttpResult inst = http_send(lookup);
  if (inst.status != 200) return {"", inst};
  auto inst_json = nlohmann::json::parse(inst.body, nullptr, false);
  if (!inst_json.is_object() || !inst_json["id"].is_number_integer()) {
    inst.status = 502;
    inst.error = "installation lookup returned no id";
    return {"", inst};
  }
  HttpRequest mint;
  mint.method = "POST";
  mint.url = fmt::format("{}/app/installations/{}/access_tokens", config_.api_url,
                         inst_json["id"].get<int64_t>());
  mint.headers = api_headers(bearer);
  mint.timeout_ms = config_.timeout_ms;
  HttpResult tok = http_send(mint);
  if (tok.status != 201 && tok.status != 200) return {"", tok};
  auto tok_json = nlohmann::json::parse(tok.body, nullptr, false);
  if (!tok_json.is_object() || !tok_json["token"].is_string()) {
    tok.status = 502;
    tok.error = "access token response has no token";
    return {"", tok};
  }
  std::string token = tok_json["token"];
  int64_t expires = parse_github_time(tok_json.value("expires_at", ""));
  // Installation tokens live one hour; refresh five minutes early so a token never expires
  // mid-request.
  int64_t refresh_after = (expires > 0 ? expires : now + 3600) - 300;
  std::lock_guard lock(mu_);
  tokens_[repo] = {token, refresh_after};
  return {token, {}};
}

HttpResult GitHubApp::call(const std::string& repo, const std::string& method,
                           const std::string& path, const std::string& body) {
  TokenResult tok = installation_token(repo);
  if (!tok.ok()) return tok.failure;
  HttpRequest req;
  req.method = method;
  req.url = config_.api_url + path;
  req.headers = api_headers("token " + tok.token);
  req.body = body;
  req.timeout_ms = config_.timeout_ms;
  HttpResult res = http_send(req);
  if (res.status == 401) forget_token(repo);  // revoked or expired early: mint anew next time
  return res;
}

HttpResult GitHubApp::app_call(const std::string& method, const std::string& path,
                               const std::string& body) {
  HttpRequest req;
  req.method = method;
  req.url = config_.api_url + path;
  req.headers = api_headers("Bearer " + app_jwt(now_s()));
  req.body = body;
  req.timeout_ms = config_.timeout_ms;
  return http_send(req);
}

HttpResult GitHubApp::dispatch(const std::string& repo, const std::string& event_type,
                               const std::string& client_payload_json) {
  std::string body = fmt::format(R"({{"event_type":{},"client_payload":{}}})",
                                 nlohmann::json(event_type).dump(), client_payload_json);
  return call(repo, "POST", "/repos/" + repo + "/dispatches", body);
}

}  // namespace ootci
