#include "relay/demotion.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "base/text.h"

namespace ootci {

bool check_runs_suppressed(Level level, const std::optional<Demotion>& demotion,
                           std::optional<int64_t> job_started_ms) {
  if (level != Level::kL3 || !demotion) return false;
  return !job_started_ms || *job_started_ms >= demotion->since_ms;
}

std::string demotion_branch(const std::string& repo) {
  return "crcr-demotion/" + repo;
}

ReconcileCounts reconcile_demotions(LevelStore& levels, GitHubApp& app, AllowlistSource& allowlist,
                                    const RelayConfig& config, int64_t now_ms) {
  ReconcileCounts counts;
  const std::string& upstream = config.upstream_repo;
  std::string owner = upstream.substr(0, upstream.find('/'));
  auto allow = allowlist.get();
  std::map<std::string, Demotion> recorded;
  for (const Demotion& d : levels.demotions()) recorded[d.repo] = d;
  std::vector<std::string> closed;  // no open PR (or no longer L3): ends after a fresh allowlist
  for (const auto& e : allow->entries()) {
    if (e.level != Level::kL3) continue;
    HttpResult r = app.call(upstream, "GET",
                            fmt::format("/repos/{}/pulls?state=open&per_page=1&head={}", upstream,
                                        url_encode(owner + ":" + demotion_branch(e.repo))));
    auto prs = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !prs.is_array()) {
      spdlog::warn("demotion: cannot list the demotion PRs of {}: {}", e.repo,
                   r.status ? "HTTP " + std::to_string(r.status) : r.error);
      counts.unchecked++;
      continue;
    }
    if (prs.empty()) {
      if (recorded.count(e.repo)) closed.push_back(e.repo);
      continue;
    }
    const auto& pr = prs[0];
    Demotion d{e.repo, now_ms, pr.value("number", int64_t{0}), pr.value("html_url", "")};
    if (!recorded.count(e.repo))
      spdlog::info("demotion: {} has demotion PR #{} open; its new check runs stop", e.repo,
                   d.pr_number);
    levels.set_demotion(d);
    counts.open++;
  }
  for (const auto& [repo, d] : recorded)
    if (allow->level_of(repo) != Level::kL3) closed.push_back(repo);
  if (closed.empty()) return counts;
  if (!allowlist.reload()) {
    spdlog::warn("demotion: the allowlist could not be fetched again; {} demotion(s) stay",
                 closed.size());
    return counts;
  }
  for (const std::string& repo : closed) {
    levels.clear_demotion(repo);
    spdlog::info("demotion: {} has no open demotion PR; its check runs resume", repo);
    counts.ended++;
  }
  return counts;
}

}  // namespace ootci
