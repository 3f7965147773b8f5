#include "attribute/runner_probes.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/file_text.h"
#include "base/git.h"
#include "base/subprocess.h"
#include "base/text.h"
#include "base/time.h"
#include "evidence/evidence_path.h"
#include "evidence/judge.h"
#include "run/runner.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

// The last lines of a command's output, where tools say what went wrong (a traceback's error,
// a compiler's last message), short enough for a verdict's summary.
std::string last_lines(const std::string& text, int lines = 3, size_t max = 300) {
  std::string t = trim_end(text);
  size_t start = t.size();
  for (int i = 0; i < lines && start != std::string::npos; ++i)
    start = start == 0 ? std::string::npos : t.rfind('\n', start - 1);
  if (start != std::string::npos) t = t.substr(start + 1);
  return t.size() <= max ? t : "..." + t.substr(t.size() - max);
}

// `path` relative to `root` when it lies inside it ("" for root itself).
std::optional<std::string> inside(const std::string& path, const std::string& root) {
  fs::path rel = fs::path(path).lexically_relative(root);
  std::string r = rel.string();
  if (rel.empty() || r == ".." || r.rfind("../", 0) == 0) return std::nullopt;
  return r == "." ? "" : r;
}

std::string join(const std::string& dir, const std::string& rel) {
  return rel.empty() ? dir : (fs::path(dir) / rel).lexically_normal().string();
}

std::string toplevel(const std::string& dir) {
  return trim(git_output(dir, {"rev-parse", "--show-toplevel"}));
}

// The full commit id, or "" when `rev` is not a commit of the repo.
std::string resolve(const std::string& repo, const std::string& rev) {
  try {
    return trim(git_output(repo, {"rev-parse", "--verify", "-q", rev + "^{commit}"}));
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

std::optional<int> pr_number(const std::string& subject, const std::string& body) {
  static const std::regex in_subject(R"(\(#(\d+)\)\s*$)");
  static const std::regex trailer(R"(Pull Request resolved: \S*/pull/(\d+))");
  std::smatch m;
  if (std::regex_search(subject, m, in_subject)) return std::stoi(m[1]);
  if (std::regex_search(body, m, trailer)) return std::stoi(m[1]);
  return std::nullopt;
}

RunnerProbes::RunnerProbes(BackendConfig config, TargetRevisions current, std::string cache_dir,
                           std::string work_dir, std::ostream& log, const std::atomic<bool>* stop)
    : config_(std::move(config)),
      current_(std::move(current)),
      cache_dir_(std::move(cache_dir)),
      work_dir_(std::move(work_dir)),
      log_(log),
      stop_(stop) {}

std::string RunnerProbes::repo_of(Target target) const {
  const AttributeSettings& a = config_.attribute;
  return target == Target::kBackend ? a.backend_repo
         : target == Target::kTests ? a.tests_repo
                                    : a.core_repo;
}

std::vector<Commit> RunnerProbes::commits_between(Target target, const std::string& from,
                                                  const std::string& to) {
  std::string repo = repo_of(target);
  if (repo.empty()) return {};
  std::string text;
  try {
    // NUL between fields, RS between commits: subjects and bodies may hold anything else.
    text = git_output(repo, {"log", "--first-parent", "--reverse", "--format=%H%x00%s%x00%b%x1e",
                             from + ".." + to});
  } catch (const Error& e) {
    log_ << fmt::format("cannot list {} commits {}..{}: {}\n", target_name(target), short_sha(from),
                        short_sha(to), e.what());
    return {};
  }
  std::vector<Commit> out;
  std::stringstream in(text);
  std::string record;
  while (std::getline(in, record, '\x1e')) {
    size_t start = record.find_first_not_of('\n');
    if (start == std::string::npos) continue;
    record = record.substr(start);
    size_t a = record.find('\0'), b = record.find('\0', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    Commit c{record.substr(0, a), record.substr(a + 1, b - a - 1), std::nullopt};
    c.pr = pr_number(c.subject, record.substr(b + 1));
    out.push_back(std::move(c));
  }
  // Only a range that really ends at `to` is a range to bisect.
  if (out.empty() || out.back().sha != resolve(repo, to)) return {};
  return out;
}

// A detached worktree of the target's repo at `rev`, made once and kept in the cache; returns
// its top folder.
std::string RunnerProbes::worktree(Target target, const std::string& rev) {
  std::string top = toplevel(repo_of(target));
  std::string sha = resolve(top, rev);
  if (sha.empty())
    throw Error(fmt::format("{} revision {} is not a commit of {}", target_name(target), rev, top));
  std::string dir = fmt::format("{}/worktrees/{}/{}", cache_dir_, target_name(target), sha);
  if (!fs::exists(dir + "/.git")) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(fs::path(dir).parent_path());
    log_ << fmt::format("worktree: {} at {}\n", target_name(target), short_sha(sha));
    git_output(top, {"worktree", "prune"});
    git_output(top, {"worktree", "add", "--detach", "--force", dir, sha});
  }
  return dir;
}

const std::map<std::string, std::string>& RunnerProbes::core_environment(const std::string& rev) {
  auto it = core_env_.find(rev);
  if (it != core_env_.end()) return it->second;
  const auto& prepare = config_.attribute.core_prepare;
  if (prepare.empty())
    throw Error(fmt::format(
        "core revision {} differs from this environment's, and attribute.targets.core.prepare "
        "is not set",
        rev));
  std::string safe = std::regex_replace(rev, std::regex("[^A-Za-z0-9._+-]"), "_");
  std::string dir = fmt::format("{}/core/{}", cache_dir_, safe);
  std::string env_file = dir + ".env";
  std::map<std::string, std::string> env;
  std::optional<std::string> cached = read_file_bytes(env_file);
  std::string text;
  if (cached) {
    text = *cached;
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(fs::path(dir).parent_path());
    SpawnOptions o;
    for (std::string arg : prepare) {
      for (auto [token, value] :
           {std::pair<std::string, std::string>{"{rev}", rev}, {"{dir}", dir}})
        for (size_t p = arg.find(token); p != std::string::npos;
             p = arg.find(token, p + value.size()))
          arg.replace(p, token.size(), value);
      o.argv.push_back(arg);
    }
    o.new_process_group = false;
    log_ << fmt::format("core: preparing {}\n", short_sha(rev));
    CapturedRun r = run_captured(o);
    if (!r.ok())
      throw Error(fmt::format("attribute.targets.core.prepare for {} exited {}: {}", rev,
                              r.exit_code, last_lines(r.err.empty() ? r.out : r.err)));
    text = r.out;
    std::ofstream(env_file) << text;
  }
  std::stringstream lines(text);
  std::string line;
  static const std::regex assignment(R"(^([A-Za-z_][A-Za-z0-9_]*)=(.*)$)");
  std::smatch m;
  while (std::getline(lines, line))
    if (std::regex_match(line, m, assignment)) env[m[1]] = m[2];
  return core_env_[rev] = env;
}

void RunnerProbes::build_backend(const std::string& dir, const std::string& backend_rev,
                                 const std::string& core_rev,
                                 const std::map<std::string, std::string>& env) {
  const auto& build = config_.attribute.backend_build;
  if (build.empty()) return;
  std::string key = backend_rev + ":" + core_rev;
  if (auto failed = build_failures_.find(key); failed != build_failures_.end())
    throw Error(failed->second);
  // A build depends on the core it compiles against, so the marker names both.
  std::string marker = fmt::format("{}/.ootci-built-{}", dir, short_sha(core_rev));
  if (fs::exists(marker)) return;
  SpawnOptions o;
  o.argv = build;
  o.cwd = dir;
  o.env = env;
  o.new_process_group = false;
  log_ << fmt::format("build: backend {} (core {})\n", short_sha(backend_rev), short_sha(core_rev));
  CapturedRun r = run_captured(o);
  if (!r.ok()) {
    std::string why = fmt::format("the backend build at {} exited {}: {}", short_sha(backend_rev),
                                  r.exit_code, last_lines(r.err.empty() ? r.out : r.err));
    build_failures_[key] = why;
    throw Error(why);
  }
  std::ofstream(marker) << "ok\n";
}

BackendConfig RunnerProbes::materialize(const Combination& wanted) {
  // What is checked out here already need not be made again (and is what the run ran).
  Combination c = wanted;
  if (c.backend == current_.backend) c.backend.clear();
  if (c.tests == current_.tests) c.tests.clear();
  if (c.core == current_.core) c.core.clear();
  std::map<std::string, std::string> env;
  if (!c.core.empty()) env = core_environment(c.core);
  EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it != env.end()) return it->second.empty() ? std::nullopt : std::optional(it->second);
    return process_env(name);
  };

  // ootci.yaml comes from the backend's worktree when it lives in the backend repo (its
  // test-suite configs move with the backend); otherwise its paths into the repo are moved.
  std::string config_path = config_.path;
  std::string backend_top, backend_worktree;
  if (!c.backend.empty()) {
    backend_top = toplevel(config_.attribute.backend_repo);
    backend_worktree = worktree(Target::kBackend, c.backend);
    if (auto rel = inside(config_.path, backend_top)) {
      config_path = join(backend_worktree, *rel);
      if (!fs::exists(config_path))
        throw Error(
            fmt::format("{} does not exist at backend revision {}", *rel, short_sha(c.backend)));
    }
  }
  BackendConfigResult loaded = load_backend_config(config_path, lookup);
  if (!loaded.config)
    throw Error(fmt::format("{} (at backend {}): {}", config_path, short_sha(c.backend),
                            loaded.errors.front()));
  BackendConfig b = std::move(*loaded.config);
  if (!c.backend.empty() && config_path == config_.path) {
    auto move = [&](std::string& p) {
      if (auto rel = inside(p, backend_top)) p = join(backend_worktree, *rel);
    };
    move(b.device_root);
    for (auto& p : b.pythonpath) move(p);
    for (auto& p : b.test_configs) move(p);
    for (auto& [_, set] : b.test_config_sets)
      for (auto& p : set.patterns) move(p);
  }
  if (!c.tests.empty()) {
    std::string tests_top = toplevel(config_.attribute.tests_repo);
    auto rel = inside(config_.torch_root, tests_top);
    if (!rel)
      throw Error(fmt::format("upstream.torch_root {} is not inside the tests repo {}",
                              config_.torch_root, tests_top));
    b.torch_root = join(worktree(Target::kTests, c.tests), *rel);
  }
  // How to run is today's choice (ootci attribute --isolation), not the old revision's; whether
  // the device can be forked (backend.fork_safe) stays the revision's own.
  b.run.isolation = config_.run.isolation;
  for (const auto& [k, v] : env) b.env[k] = v;
  if (!c.backend.empty()) build_backend(b.device_root, c.backend, wanted.core, env);
  b.workspace = work_dir_ + "/probe-runs";
  b.attribute = config_.attribute;
  return b;
}

ProbeOutcome RunnerProbes::run(const Combination& c, const std::vector<std::string>& ids,
                               int reruns) {
  ProbeOutcome out;
  RunRequest req;
  try {
    req.backend = materialize(c);
  } catch (const std::exception& e) {
    out.ran = false;
    out.problem = e.what();
    return out;
  }
  req.backend.run.reruns = reruns;
  req.evidence_path = work_dir_ + "/probes.db";
  req.stop = stop_;
  req.run_id = fmt::format("probe-{}-{}", ++probe_count_, new_run_id(now_ms()));
  Selection sel;
  for (const auto& id : ids)
    (id.find("::") == std::string::npos ? sel.files : sel.tests).insert(id);
  req.selection = sel;
  RunReport report = run_plan(req);
  if (report.status != RunStatus::kFinished) {
    out.ran = false;
    out.problem = "the probe run was interrupted";
    return out;
  }
  Verdict v = judge(report.results, nullptr);
  std::set<std::string> failing;
  for (const auto& f : v.failing) failing.insert(f.test_id);
  for (const auto& id : ids) {
    std::string file = id.substr(0, id.find("::"));
    // A whole file failing (it did not collect, its process could not start) fails each variant.
    if (failing.count(id) || failing.count(file)) out.failing.insert(id);
  }
  for (const auto& id : v.flaky)
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) out.flaky.insert(id);
  for (const auto& r : report.results) out.executions += 1 + r.reruns;
  return out;
}

}  // namespace ootci
