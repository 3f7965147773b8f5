#include "relay/level_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "base/text.h"
#include "base/yaml_doc.h"
#include "net/crypto.h"
#include "relay/allowlist.h"
#include "relay/allowlist_edit.h"
#include "relay/demotion.h"

namespace ootci {
namespace {

const std::vector<std::string> kExtraLabels = {"topic: not user facing"};

// One REST call to the upstream repo through the App; throws Error naming the call on a status
// other than the ones expected.
class Upstream {
 public:
  Upstream(GitHubApp& app, std::string repo) : app_(app), repo_(std::move(repo)) {}
  const std::string& repo() const { return repo_; }
  std::string owner() const { return repo_.substr(0, repo_.find('/')); }

  HttpResult call(const std::string& method, const std::string& path,
                  const nlohmann::json& body = nullptr) {
    return app_.call(repo_, method, "/repos/" + repo_ + path, body.is_null() ? "" : body.dump());
  }
  nlohmann::json expect(const std::string& method, const std::string& path,
                        const nlohmann::json& body, std::initializer_list<int> ok) {
    HttpResult r = call(method, path, body);
    if (std::find(ok.begin(), ok.end(), r.status) == ok.end())
      throw Error(fmt::format("{} {}: {}", method, path, failure(r)));
    return nlohmann::json::parse(r.body.empty() ? "null" : r.body, nullptr, false);
  }
  static std::string failure(const HttpResult& r) {
    if (!r.status) return r.error;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    std::string message = j.is_object() ? j.value("message", "") : "";
    return fmt::format("HTTP {}{}", r.status, message.empty() ? "" : ": " + message);
  }

 private:
  GitHubApp& app_;
  std::string repo_;
};

// The base branch's allowlist: its text, its blob sha and the commit it was read at.
struct AllowlistFile {
  std::string commit, blob, text;
};

AllowlistFile read_allowlist(Upstream& up, const RelayConfig& c) {
  AllowlistFile f;
  auto ref = up.expect("GET", "/git/ref/heads/" + c.sync_levels.base_branch, nullptr, {200});
  f.commit = ref.at("/object/sha"_json_pointer);
  auto file =
      up.expect("GET", fmt::format("/contents/{}?ref={}", c.sync_levels.allowlist_path, f.commit),
                nullptr, {200});
  f.blob = file.value("sha", "");
  std::string b64 = file.value("content", "");
  b64.erase(std::remove(b64.begin(), b64.end(), '\n'), b64.end());
  auto text = base64url_decode(b64);
  if (!text) throw Error(c.sync_levels.allowlist_path + ": the contents API sent no base64 text");
  f.text = *text;
  return f;
}

// The bot's open demotion PRs, with GitHub's verdict on conflicts (computed lazily: asked up to
// three times while it says "not known yet").
std::vector<OpenDemotionPr> open_demotion_prs(GitHubApp& app, Upstream& up) {
  HttpResult self = app.app_call("GET", "/app");
  auto app_doc = nlohmann::json::parse(self.body, nullptr, false);
  if (self.status != 200 || !app_doc.is_object())
    throw Error("GET /app: " + Upstream::failure(self));
  std::string bot = app_doc.value("slug", "") + "[bot]";
  auto issues = up.expect(
      "GET", fmt::format("/issues?state=open&per_page=100&labels={}", url_encode(kDemotionLabel)),
      nullptr, {200});
  std::vector<OpenDemotionPr> out;
  for (const auto& issue : issues) {
    if (!issue.contains("pull_request") || issue.value("/user/login"_json_pointer, "") != bot)
      continue;
    int64_t number = issue.value("number", int64_t{0});
    nlohmann::json pr;
    for (int i = 0; i < 3; ++i) {
      pr = up.expect("GET", fmt::format("/pulls/{}", number), nullptr, {200});
      if (!pr["mergeable"].is_null()) break;
    }
    std::string head = pr.value("/head/ref"_json_pointer, "");
    std::string prefix = demotion_branch("");
    if (head.rfind(prefix, 0) != 0) continue;
    out.push_back({head.substr(prefix.size()), number, pr["mergeable"] == false});
  }
  return out;
}

int64_t open_or_refresh(Upstream& up, const AllowlistFile& base, const LevelStatus& status,
                        const std::vector<std::string>& oncalls, const RelayConfig& c) {
  const std::string& repo = status.repo;
  std::string branch = demotion_branch(repo);
  std::string title = demotion_title(repo);
  // The edit first: a file it cannot change minimally gets no branch and no PR.
  std::string text = demote_in_allowlist(base.text, repo, c.sync_levels.allowlist_path);
  HttpResult created =
      up.call("POST", "/git/refs", {{"ref", "refs/heads/" + branch}, {"sha", base.commit}});
  if (created.status == 422)  // the branch exists (a refresh): reset it to the base branch
    up.expect("PATCH", "/git/refs/heads/" + branch, {{"sha", base.commit}, {"force", true}}, {200});
  else if (created.status != 201)
    throw Error("POST /git/refs: " + Upstream::failure(created));
  up.expect("PUT", "/contents/" + c.sync_levels.allowlist_path,
            {{"message", title},
             {"content", base64_encode(text)},
             {"sha", base.blob},
             {"branch", branch}},
            {200, 201});
  HttpResult pr = up.call("POST", "/pulls",
                          {{"title", title},
                           {"head", branch},
                           {"base", c.sync_levels.base_branch},
                           {"body", demotion_body(status, oncalls, c)}});
  int64_t number = 0;
  if (pr.status == 201) {
    number = nlohmann::json::parse(pr.body).value("number", int64_t{0});
  } else if (pr.status == 422) {  // one is open already
    auto found = up.expect(
        "GET", fmt::format("/pulls?state=open&head={}", url_encode(up.owner() + ":" + branch)),
        nullptr, {200});
    if (!found.is_array() || found.empty()) throw Error("POST /pulls: " + Upstream::failure(pr));
    number = found[0].value("number", int64_t{0});
  } else {
    throw Error("POST /pulls: " + Upstream::failure(pr));
  }
  nlohmann::json labels = {kDemotionLabel};
  for (const auto& l : kExtraLabels) labels.push_back(l);
  up.expect("POST", fmt::format("/issues/{}/labels", number), {{"labels", labels}}, {200});
  return number;
}

void close_pr(Upstream& up, const SyncAction& a) {
  up.expect("POST", fmt::format("/issues/{}/comments", a.pr),
            {{"body", fmt::format("`{}` {}, so this PR is no longer needed. Closing it.", a.repo,
                                  a.reason)}},
            {201});
  up.expect("PATCH", fmt::format("/pulls/{}", a.pr), {{"state", "closed"}}, {200});
  HttpResult gone = up.call("DELETE", "/git/refs/heads/" + demotion_branch(a.repo));
  if (gone.status != 204)
    spdlog::warn("sync-levels: the branch of #{} stays: {}", a.pr, Upstream::failure(gone));
}

std::string at_name(const std::string& who) {
  std::string name = trim(who);
  while (!name.empty() && name[0] == '@') name.erase(0, 1);
  return "@" + name;
}

}  // namespace

std::vector<SyncAction> plan_level_sync(const std::vector<LevelStatus>& statuses,
                                        const std::vector<std::string>& l3_repos,
                                        const std::vector<OpenDemotionPr>& open,
                                        const std::string& base_branch) {
  std::map<std::string, const LevelStatus*> status_of;
  for (const auto& s : statuses) status_of[s.repo] = &s;
  std::set<std::string> l3(l3_repos.begin(), l3_repos.end());
  std::map<std::string, const OpenDemotionPr*> pr_of;
  for (const auto& p : open) pr_of[p.repo] = &p;
  std::vector<SyncAction> out;
  for (const auto& [repo, pr] : pr_of) {
    auto s = status_of.find(repo);
    if (!l3.count(repo))
      out.push_back({SyncAction::kClose, repo, pr->number,
                     fmt::format("is no longer at L3 on `{}`", base_branch)});
    else if (s != status_of.end() && s->second->change() != "demote")
      out.push_back({SyncAction::kClose, repo, pr->number, "is back within its L3 targets"});
  }
  for (const std::string& repo : l3) {
    auto s = status_of.find(repo);
    if (s == status_of.end() || s->second->change() != "demote") continue;
    auto pr = pr_of.find(repo);
    if (pr == pr_of.end())
      out.push_back({SyncAction::kOpen, repo, 0, ""});
    else if (pr->second->conflicted)
      out.push_back({SyncAction::kRefresh, repo, pr->second->number, ""});
  }
  return out;
}

std::string demotion_title(const std::string& repo) {
  return fmt::format("[CRCR] Demote {} from L3 to L2", repo);
}

std::string demotion_body(const LevelStatus& s, const std::vector<std::string>& oncalls,
                          const RelayConfig& c) {
  const std::string& hud = c.sync_levels.hud_url;
  std::string out = fmt::format(
      "Over the last {} days, [`{}`]({}/crcr/{}) missed these L3 targets:\n\n"
      "| Criterion | Measured | L3 target |\n| --- | --- | --- |\n",
      s.window_days, s.repo, hud, s.repo);
  for (const auto& criterion : s.criteria)
    if (criterion.met() == false)
      out += fmt::format("| {} | {} | {} |\n", criterion.label, criterion.measured_text(),
                         criterion.target_label);
  out += fmt::format(
      "\nThis moves it from L3 to L2 in `{}`. L2 entries have no oncalls or device, so both are "
      "dropped.\n\n",
      c.sync_levels.allowlist_path);
  std::vector<std::string> cc;
  for (const auto& who : oncalls) cc.push_back(at_name(who));
  if (oncalls.empty()) out += "No oncalls are listed for this repo in the allowlist.\n\n";
  for (const auto& who : c.sync_levels.always_cc) cc.push_back(at_name(who));
  if (!cc.empty()) {
    out += "cc";
    for (const auto& who : cc) out += " " + who;
    out += "\n\n";
  }
  out += fmt::format(
      "- This PR closes itself once `{0}` is back within its L3 targets.\n"
      "- Closing it by hand does not cancel the demotion: while `{0}` misses its targets, a new "
      "one is opened.\n"
      "- While it is open the relay creates no new check runs for `{0}` on PyTorch PRs.\n"
      "- To discuss the demotion, comment here; to carry it out, merge this PR.\n\n"
      "---\nOpened by `ootci relay sync-levels` (the relay's HUD: {1}/crcr).\n",
      s.repo, hud);
  return out;
}

SyncReport sync_levels(GitHubApp& app, Store& store, const RelayConfig& c, int64_t now_ms,
                       bool dry_run) {
  SyncReport report;
  Upstream up(app, c.upstream_repo);
  AllowlistFile base;
  std::shared_ptr<Allowlist> allow;
  std::vector<OpenDemotionPr> open;
  try {
    base = read_allowlist(up, c);
    allow = std::make_shared<Allowlist>(
        Allowlist::parse(load_yaml_text(c.sync_levels.allowlist_path, base.text)));
    open = open_demotion_prs(app, up);
  } catch (const std::exception& e) {
    report.failed.push_back(e.what());
    return report;
  }
  std::vector<std::string> l3;
  std::map<std::string, std::vector<std::string>> oncalls;
  for (const auto& e : allow->entries())
    if (e.level == Level::kL3) l3.push_back(e.repo), oncalls[e.repo] = e.oncalls;
  std::vector<LevelStatus> statuses = level_statuses(store, *allow, now_ms, c.hud.levels);
  for (const SyncAction& a : plan_level_sync(statuses, l3, open, c.sync_levels.base_branch)) {
    const char* verb = a.kind == SyncAction::kOpen      ? "open"
                       : a.kind == SyncAction::kRefresh ? "refresh"
                                                        : "close";
    std::string what =
        a.pr ? fmt::format("{} {} #{}", verb, a.repo, a.pr) : fmt::format("{} {}", verb, a.repo);
    if (dry_run) {
      report.done.push_back("would " + what + (a.reason.empty() ? "" : ": " + a.reason));
      continue;
    }
    try {
      if (a.kind == SyncAction::kClose) {
        close_pr(up, a);
        report.done.push_back(what + ": " + a.reason);
      } else {
        const LevelStatus& s = *std::find_if(statuses.begin(), statuses.end(),
                                             [&](const auto& x) { return x.repo == a.repo; });
        int64_t pr = open_or_refresh(up, base, s, oncalls[a.repo], c);
        report.done.push_back(fmt::format("{} {} #{}", verb, a.repo, pr));
      }
    } catch (const std::exception& e) {
      report.failed.push_back(fmt::format("{} {}: {}", verb, a.repo, e.what()));
    }
  }
  return report;
}

}  // namespace ootci
