// Agent chaos: the real relay dispatches real pull_request webhooks to a real `ootci agent`, which
// runs test_view_ops.py (260 variants, ~10 s) on the reference backend per job and calls the
// relay back. Every trial SIGKILLs the agent (the process only, as a crash would) while a job
// runs, and restarts it. The moment is random (seeded): uniform over the first --max-delay-ms of
// the job's run, or, in a --callback-share of the trials, the narrowest window there is: the
// relay has applied the job's in_progress or completed and the agent awaits the answer. The next
// job's webhook arrives at a random point, during the run or while the agent is down. At the end
// every job must be done, and:
//   - the relay applied exactly one `completed` callback per job, and refused no callback;
//   - every job concluded success with 260 results in one finished run;
//   - the run resumed: same run id across the kill, and every variant settled before the kill is
//     still there with the same finish time (kept, not rerun);
//   - no process of the killed agent (its `ootci run`, pytest) outlived it.
// The agent's callbacks pass through a counting proxy on their way to the relay, so every POST
// is seen, including re-sends the relay answers as duplicates.
//
//   build/bench/ootci-bench agent-chaos --trials 20 --seed 1     (about 4 minutes on 2 cores)
// OOTCI_KEEP_TEMP=1 keeps the work folder (agent.log, relay.log, job logs) for a look afterwards.
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/sha256.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "evidence/evidence_store.h"
#include "net/crypto.h"
#include "net/http_client.h"
#include "relay_store/store.h"
#include "testing/agent_config.h"
#include "testing/github_standin.h"
#include "testing/oidc_issuer.h"
#include "testing/relay_config.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci::bench::agent_chaos {

namespace fs = std::filesystem;

constexpr const char* kWebhookSecret = "It's a Secret to Everybody";
constexpr const char* kAgentSecret = "agent-secret-for-chaos";
constexpr const char* kUpstream = "Codertocat/Hello-World";
constexpr int64_t kVariants = 260;  // test_view_ops.py on the reference backend

struct Options {
  int trials = 20;
  uint64_t seed = 1;
  int max_delay_ms = 10000;
  double callback_share = 0.2;
  std::string torch_root;
  std::string backend_dir;
};

// ---- the callback path: agent -> counting proxy -> relay ----

struct CallbackSeen {
  std::string delivery;
  std::string run_id;
  std::string status;  // in_progress | completed
  std::string conclusion;
  std::string body_sha;
  int relay_status = 0;
  bool duplicate = false;  // the relay's answer: an exact repeat of an applied step
};

class CallbackProxy {
 public:
  explicit CallbackProxy(std::string relay_url) : relay_url_(std::move(relay_url)) {
    server_.Post("/github/callback", [this](const httplib::Request& req, httplib::Response& res) {
      HttpRequest out;
      out.method = "POST";
      out.url = relay_url_ + "/github/callback";
      out.body = req.body;
      if (req.has_header("Authorization"))
        out.headers = {{"Authorization", req.get_header_value("Authorization")}};
      HttpResult r = http_send(out);
      CallbackSeen seen;
      seen.body_sha = sha256_hex(req.body);
      seen.relay_status = r.status;
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      if (body.is_object()) {
        seen.delivery = body.value("delivery_id", "");
        const auto& w = body.contains("workflow") ? body["workflow"] : nlohmann::json::object();
        if (w.is_object()) {
          seen.status = w.value("status", "");
          seen.run_id = w.contains("run_id") && w["run_id"].is_string()
                            ? w["run_id"].get<std::string>()
                            : (w.contains("run_id") ? w["run_id"].dump() : "");
          if (w.contains("conclusion") && w["conclusion"].is_string())
            seen.conclusion = w["conclusion"];
        }
      }
      nlohmann::json answer = nlohmann::json::parse(r.body, nullptr, false);
      seen.duplicate = answer.is_object() && answer.value("duplicate", false);
      {
        std::unique_lock lock(mu_);
        seen_.push_back(seen);
        // Armed: the relay has applied this callback, and the agent is not told until the bench
        // has killed it.
        if (hold_ && !held_ && r.status >= 200 && r.status < 300 && hold_->first == seen.delivery &&
            hold_->second == seen.status) {
          held_ = true;
          cv_.notify_all();
          cv_.wait_for(lock, std::chrono::seconds(120), [this] { return !hold_; });
        }
      }
      if (r.status == 0) {
        res.status = 502;
        res.set_content(r.error, "text/plain");
        return;
      }
      res.status = r.status;
      res.set_content(r.body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~CallbackProxy() {
    release();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  std::vector<CallbackSeen> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  bool saw(const std::string& delivery, const std::string& status) const {
    std::lock_guard lock(mu_);
    return std::any_of(seen_.begin(), seen_.end(), [&](const CallbackSeen& c) {
      return c.delivery == delivery && c.status == status;
    });
  }
  // Holds back the relay's answer to the next `status` callback for `delivery`.
  void arm(const std::string& delivery, const std::string& status) {
    std::lock_guard lock(mu_);
    hold_ = {delivery, status};
    held_ = false;
  }
  // Waits until the armed callback is being held; false on timeout or when `give_up` says so.
  bool wait_held(int timeout_ms, const std::function<bool()>& give_up) {
    for (int waited = 0; waited < timeout_ms; waited += 100) {
      {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return held_; }))
          return true;
      }
      if (give_up()) return false;
    }
    return false;
  }
  // Lets a held answer go (to a dead agent) and disarms.
  void release() {
    std::lock_guard lock(mu_);
    hold_.reset();
    held_ = false;
    cv_.notify_all();
  }

 private:
  std::string relay_url_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CallbackSeen> seen_;
  std::optional<std::pair<std::string, std::string>> hold_;  // delivery, status
  bool held_ = false;
};

// ---- processes: what the killed agent left behind ----

struct ProcId {
  pid_t pid = 0;
  unsigned long long start = 0;  // /proc/<pid>/stat starttime: a reused pid differs
  std::string comm;
};

struct ProcStat {
  pid_t ppid = 0;
  char state = '?';
  unsigned long long start = 0;
  std::string comm;
};

std::optional<ProcStat> proc_stat(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  ProcStat s;
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest), {}};
  if (f.size() < 20) return std::nullopt;
  s.state = f[0][0];
  s.ppid = std::stoi(f[1]);
  s.start = std::stoull(f[19]);
  return s;
}

// Every live descendant of `root`, however deep (process groups and sessions aside).
std::vector<ProcId> descendants(pid_t root) {
  std::multimap<pid_t, std::pair<pid_t, ProcStat>> children;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    pid_t pid = std::stoi(name);
    if (auto s = proc_stat(pid)) children.emplace(s->ppid, std::make_pair(pid, *s));
  }
  std::vector<ProcId> out;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      out.push_back({it->second.first, it->second.second.start, it->second.second.comm});
      todo.push_back(it->second.first);
    }
  }
  return out;
}

bool alive(const ProcId& p) {
  auto s = proc_stat(p.pid);
  return s && s->start == p.start && s->state != 'Z' && s->state != 'X';
}

// ---- the agent's view ----

struct AgentJobView {
  int64_t id = 0;
  std::string delivery;
  std::string state;
  std::string run_id;
  std::string conclusion;
  std::string error;
};

struct Kill {
  int trial = 0;
  double delay_s = 0;
  int64_t job_id = 0;  // 0: no job was running
  std::string delivery;
  std::string run_id;
  // idle (no job running) | before run (in_progress, no run id yet) | run starting (no variant
  // settled yet) | mid-run | after run (the run finished: verdict, completed callback) |
  // in_progress unanswered, completed unanswered (the relay applied it; the agent awaited it)
  std::string phase;
  std::optional<RunStatus> run_status;
  int64_t run_ended_ms = 0;
  size_t results = 0;
  // Variants settled before the kill: test id -> finish time. A resumed run keeps them.
  std::map<std::string, int64_t> settled;
  size_t descendants = 0;
  std::vector<std::string> survivors;  // "pid comm" of processes that outlived the agent
  double restart_s = 0;
};

class Chaos {
 public:
  explicit Chaos(Options o) : o_(std::move(o)), rng_(o_.seed) {}

  ~Chaos() {
    if (agent_) {
      agent_->signal(SIGTERM);
      agent_->wait();
    }
  }

  int run() {
    int64_t started = steady_us();
    set_up();
    std::cout << fmt::format(
        "agent chaos: {} trial(s), seed {}; a kill at U[0, {:.1f}] s after a job's run starts, "
        "or ({:.0f}% of trials) while the relay's answer to a callback is held; work folder {}\n",
        o_.trials, o_.seed, o_.max_delay_ms / 1000.0, o_.callback_share * 100, dir_);
    start_agent();
    dispatch(0);
    for (int t = 0; t < o_.trials; ++t) trial(t);
    std::cout << "all trials done; waiting for every job to finish\n" << std::flush;
    std::vector<AgentJobView> final_jobs = wait_all_done();
    agent_->signal(SIGTERM);
    agent_->wait();
    agent_.reset();
    double wall_s = (steady_us() - started) / 1e6;
    return summarize(final_jobs, wall_s);
  }

 private:
  // ---- set-up: the GitHub stand-in, an OIDC issuer, the relay, the proxy, two configs ----

  void set_up() {
    dir_ = make_temp_dir();
    standin_ = start_github_standin(dir_, 42);
    oidc_ = std::make_unique<OidcIssuerStandin>();
    oidc_->start();
    write_file(dir_ + "/allowlist.yml", "L2:\n  - acme/two\n");
    store_uri_ = fresh_store_uri("sqlite");
    agent_port_ = free_port();
    int relay_port = free_port();
    RelayYaml y = wired_relay(relay_port, store_uri_, *standin_, oidc_.get());
    y.upstream = kUpstream;
    y.dispatch += "  request_timeout_ms: 5000\n  deadline_s: 300\n";
    y.extra = agent_downstream_yaml("acme/two", agent_port_);
    relay_ = std::make_unique<RelayProcess>(
        dir_, relay_yaml(y), relay_port,
        std::map<std::string, std::string>{{"TEST_WEBHOOK_SECRET", kWebhookSecret},
                                           {"TEST_AGENT_SECRET", kAgentSecret}});
    relay_->start();
    proxy_ = std::make_unique<CallbackProxy>(relay_->url());

    std::string ref = fs::absolute(o_.backend_dir).string();
    write_file(dir_ + "/ootci.yaml",
               reference_backend_yaml(
                   ref, o_.torch_root, proxy_->url(),
                   fmt::format(R"([/usr/bin/curl, -sf, "{}/token?repository=acme/two"])",
                               oidc_->issuer())));
    write_file(dir_ + "/agent.yaml", agent_yaml(agent_port_));
    pr_template_ = nlohmann::json::parse(
        read_file(fixture_path("github-webhooks/pull_request.synchronize.json")));
  }

  // ---- the agent ----

  void start_agent() {
    int64_t t0 = steady_us();
    SpawnOptions o;
    o.argv = {binary_dir() + "/ootci", "agent", "--config", dir_ + "/agent.yaml"};
    o.env = {{"TEST_AGENT_SECRET", kAgentSecret}};
    o.output_file = dir_ + "/agent.log";
    agent_ = Subprocess::spawn(o);
    for (int i = 0; i < 400; ++i) {
      if (agent_get("/healthz").status == 200) {
        last_restart_s_ = (steady_us() - t0) / 1e6;
        return;
      }
      if (agent_->try_wait()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    throw Error("the agent did not start; " + log_tail("agent.log"));
  }

  HttpResult agent_get(const std::string& path) {
    HttpRequest req;
    req.url = fmt::format("http://127.0.0.1:{}{}", agent_port_, path);
    req.timeout_ms = 5000;
    return http_send(req);
  }

  std::vector<AgentJobView> jobs() {
    HttpResult r = agent_get("/api/jobs");
    std::vector<AgentJobView> out;
    if (r.status != 200) return out;
    for (const auto& j : nlohmann::json::parse(r.body)) {
      AgentJobView v;
      v.id = j["id"];
      v.delivery = j["delivery_id"];
      v.state = j["state"];
      v.run_id = j["run_id"];
      v.conclusion = j["conclusion"];
      v.error = j["error"];
      out.push_back(v);
    }
    return out;
  }

  std::optional<AgentJobView> job_for(const std::vector<AgentJobView>& all,
                                      const std::string& delivery) {
    for (const auto& j : all)
      if (j.delivery == delivery) return j;
    return std::nullopt;
  }

  std::string log_tail(const std::string& name, size_t bytes = 4000) {
    std::string text;
    try {
      text = read_file(dir_ + "/" + name);
    } catch (...) {
    }
    if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
    return fmt::format("{} (tail):\n{}", name, text);
  }

  // ---- jobs: one pull_request webhook each, distinct PR, head and delivery ----

  static std::string delivery_of(int job) { return fmt::format("chaos-{:03}", job); }

  void dispatch(int job) {
    if (job >= o_.trials) return;
    nlohmann::json body = pr_template_;
    int number = 100 + job;
    body["action"] = "opened";
    body["number"] = number;
    body["pull_request"]["number"] = number;
    body["pull_request"]["head"]["sha"] = fmt::format("{:040x}", 0xc4a05000 + job);
    HttpResult r =
        send_webhook(relay_->url(), "pull_request", delivery_of(job), body.dump(), kWebhookSecret);
    if (r.status != 200)
      throw Error(fmt::format("the relay answered the webhook for job {} with {} {}", job, r.status,
                              r.body));
    ++dispatched_;
  }

  // ---- a trial: wait for job t's run, dispatch job t+1 at a random point, kill, restart ----

  // Until job `t` runs its tests (or is over).
  void wait_for_run(const std::string& delivery) {
    int64_t deadline = steady_us() + 300'000'000;
    while (true) {
      auto j = job_for(jobs(), delivery);
      if (j && ((j->state == "running" && !j->run_id.empty()) || j->state == "done" ||
                j->state == "cancelled"))
        return;
      if (steady_us() > deadline)
        throw Error(
            fmt::format("job {} never started its run; {}", delivery, log_tail("agent.log")));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  bool job_over(const std::string& delivery) {
    auto j = job_for(jobs(), delivery);
    return j && j->state != "queued" && j->state != "running";
  }

  void trial(int t) {
    std::string delivery = delivery_of(t);
    // Every draw is made in every trial, so a seed gives the same moments whatever happens.
    double kind = std::uniform_real_distribution<double>(0, 1)(rng_);
    int delay_ms = std::uniform_int_distribution<int>(0, o_.max_delay_ms)(rng_);
    bool next_while_down = std::uniform_int_distribution<int>(0, 1)(rng_) == 1;
    int next_at_ms = std::uniform_int_distribution<int>(0, delay_ms)(rng_);
    // Mostly a random moment of the run. A share of trials kill in the narrowest window instead:
    // the relay has applied the job's in_progress (or completed) and the agent awaits the answer.
    std::string window = kind < o_.callback_share / 2 ? "in_progress"
                         : kind < o_.callback_share   ? "completed"
                                                      : "";
    if (window == "in_progress" && proxy_->saw(delivery, "in_progress")) window = "completed";
    bool held = false;
    int64_t t0 = steady_us();
    if (window == "in_progress") {
      proxy_->arm(delivery, "in_progress");
      held = proxy_->wait_held(300'000, [&] { return job_over(delivery); });
      if (!next_while_down) dispatch(t + 1);
    } else if (window == "completed") {
      wait_for_run(delivery);
      proxy_->arm(delivery, "completed");
      t0 = steady_us();
      if (!next_while_down) dispatch(t + 1);
      held = proxy_->wait_held(300'000, [&] { return job_over(delivery); });
    } else {
      wait_for_run(delivery);
      t0 = steady_us();
      // The next webhook: half the time during the run, else while the agent is down.
      if (!next_while_down) {
        std::this_thread::sleep_for(std::chrono::milliseconds(next_at_ms));
        dispatch(t + 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms - next_at_ms));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      }
    }

    Kill k;
    k.trial = t;
    k.delay_s = (steady_us() - t0) / 1e6;
    for (const auto& j : jobs())
      if (j.state == "running") {
        k.job_id = j.id;
        k.delivery = j.delivery;
        k.run_id = j.run_id;
      }
    std::vector<ProcId> tree = descendants(agent_->pid());
    k.descendants = tree.size();
    ::kill(agent_->pid(), SIGKILL);  // the agent process only, as a crash or the OOM killer
    agent_->wait();
    agent_.reset();
    proxy_->release();
    // Its children die with it (PR_SET_PDEATHSIG); give them a moment to be gone.
    for (int i = 0; i < 100; ++i) {
      if (std::none_of(tree.begin(), tree.end(), alive)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (const auto& p : tree)
      if (alive(p)) {
        k.survivors.push_back(fmt::format("{} {}", p.pid, p.comm));
        ::kill(p.pid, SIGKILL);  // ours (the agent's), and they would skew the next trials
      }
    snapshot_run(k);
    if (held) k.phase = window + " unanswered";
    if (next_while_down) dispatch(t + 1);  // the relay retries until the agent is back
    start_agent();
    k.restart_s = last_restart_s_;
    std::cout << fmt::format(
                     "trial {:>3}/{}: SIGKILL at {:5.2f} s: {}{}; {} process(es) under the "
                     "agent, {} outlived it; back in {:.2f} s; next webhook {}\n",
                     t + 1, o_.trials, k.delay_s,
                     k.job_id ? fmt::format("job {} ", k.job_id) : std::string(), describe(k),
                     k.descendants, k.survivors.size(), k.restart_s,
                     t + 1 >= o_.trials ? "none"
                     : next_while_down  ? "while the agent was down"
                                        : "during the run")
              << std::flush;
    kills_.push_back(std::move(k));
  }

  static std::string describe(const Kill& k) {
    if (k.phase == "mid-run")
      return fmt::format("mid-run, {}/{} variants settled", k.results, kVariants);
    return k.phase;
  }

  // What the killed job's run had recorded: read once its processes are gone.
  void snapshot_run(Kill& k) {
    if (!k.job_id) {
      k.phase = "idle";
      return;
    }
    if (k.run_id.empty()) {
      k.phase = "before run";
      return;
    }
    auto store = EvidenceStore::open(dir_ + "/ws/evidence.db");
    auto info = store->run(k.run_id);
    if (!info) {
      k.phase = "run starting";
      return;
    }
    k.run_status = info->status;
    k.run_ended_ms = info->ended_ms;
    for (const auto& r : store->results(k.run_id)) {
      ++k.results;
      bool settled = !is_failure(r.outcome);
      if (settled && !r.name.empty()) k.settled[r.test_id] = r.finished_ms;
    }
    k.phase = info->status == RunStatus::kFinished ? "after run"
              : k.results                          ? "mid-run"
                                                   : "run starting";
  }

  std::vector<AgentJobView> wait_all_done() {
    int64_t deadline = steady_us() + int64_t(120 + 60 * o_.trials) * 1'000'000;
    while (true) {
      std::vector<AgentJobView> all = jobs();
      size_t done = 0;
      for (int t = 0; t < o_.trials; ++t) {
        auto j = job_for(all, delivery_of(t));
        done += j && (j->state == "done" || j->state == "cancelled");
      }
      if (done == size_t(o_.trials)) {
        // Anything still in flight (a callback re-send) would show up here.
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        return jobs();
      }
      if (steady_us() > deadline) {
        std::cout << fmt::format("timed out: {}/{} jobs done\n", done, o_.trials);
        return all;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // ---- the verdict ----

  int summarize(const std::vector<AgentJobView>& final_jobs, double wall_s) {
    auto relay_store = open_store(store_uri_);
    auto evidence = EvidenceStore::open(dir_ + "/ws/evidence.db");
    std::vector<CallbackSeen> calls = proxy_->seen();

    int jobs_done = 0, exactly_once = 0, succeeded = 0, relay_ok = 0, runs_ok = 0;
    int completed_sent = 0, completed_resent = 0, in_progress_resent = 0, refused = 0;
    std::map<int, int> in_progress_per_job;  // callbacks -> jobs
    std::vector<std::string> not_once, not_success, bad_relay, bad_runs, refusals;
    std::map<std::string, AgentJobView> by_delivery;
    for (int t = 0; t < o_.trials; ++t) {
      std::string d = delivery_of(t);
      auto j = job_for(final_jobs, d);
      if (!j) {
        not_once.push_back(d + " (no agent job)");
        continue;
      }
      by_delivery[d] = *j;
      jobs_done += j->state == "done";
      int applied = 0, in_progress = 0;
      for (const auto& c : calls) {
        if (c.delivery != d) continue;
        if (c.relay_status < 200 || c.relay_status >= 300) {
          ++refused;
          refusals.push_back(fmt::format("{} {} -> {}", d, c.status, c.relay_status));
          continue;
        }
        if (c.status == "in_progress") ++in_progress, in_progress_resent += c.duplicate;
        if (c.status != "completed") continue;
        ++completed_sent;
        if (c.duplicate)
          ++completed_resent;
        else
          ++applied;
      }
      in_progress_per_job[in_progress]++;
      if (applied == 1)
        ++exactly_once;
      else
        not_once.push_back(fmt::format("{} (job {}): {} completed", d, j->id, applied));
      if (j->state == "done" && j->conclusion == "success")
        ++succeeded;
      else
        not_success.push_back(
            fmt::format("{} (job {}): {} {} {}", d, j->id, j->state, j->conclusion, j->error));
      auto rec = relay_store->jobs.get_job(fmt::format("{}:acme/two:{}:1:ootci-agent", d, j->id));
      if (rec && rec->status == JobStatus::kCompleted &&
          rec->conclusion == JobConclusion::kSuccess && rec->tests_total == kVariants &&
          rec->tests_passed == kVariants && !rec->in_progress_hash.empty())
        ++relay_ok;
      else
        bad_relay.push_back(rec ? fmt::format("{} (job {}): {} {} {}/{}", d, j->id,
                                              to_string(rec->status), rec->conclusion.text(),
                                              rec->tests_passed, rec->tests_total)
                                : fmt::format("{} (job {}): no record", d, j->id));
      auto info = j->run_id.empty() ? std::nullopt : evidence->run(j->run_id);
      size_t n = info ? evidence->results(j->run_id).size() : 0;
      if (info && info->green() && n == size_t(kVariants))
        ++runs_ok;
      else
        bad_runs.push_back(fmt::format("{} run {}: {} {} {} results", d, j->run_id,
                                       info ? to_string(info->status) : "missing",
                                       info ? to_string(info->verdict) : "", n));
    }

    // Resume: per kill of a job whose run had started.
    std::map<std::string, int> phases;
    int resumed = 0, kept = 0, rerun = 0, lost = 0, id_changed = 0, finished_rerun = 0;
    int survivors = 0;
    std::vector<std::string> resume_failures, survivor_list;
    for (const auto& k : kills_) {
      phases[k.phase]++;
      survivors += k.survivors.size();
      for (const auto& s : k.survivors)
        survivor_list.push_back(fmt::format("trial {}: {}", k.trial + 1, s));
      if (k.run_id.empty() || !by_delivery.count(k.delivery)) continue;
      const AgentJobView& j = by_delivery[k.delivery];
      if (j.run_id != k.run_id) {
        ++id_changed;
        resume_failures.push_back(fmt::format("trial {}: job {} run {} became {}", k.trial + 1,
                                              j.id, k.run_id, j.run_id));
        continue;
      }
      std::map<std::string, int64_t> now;
      for (const auto& r : evidence->results(k.run_id)) now[r.test_id] = r.finished_ms;
      int k_kept = 0, k_rerun = 0, k_lost = 0;
      for (const auto& [id, at] : k.settled) {
        auto it = now.find(id);
        if (it == now.end())
          ++k_lost;
        else if (it->second != at)
          ++k_rerun;
        else
          ++k_kept;
      }
      kept += k_kept;
      rerun += k_rerun;
      lost += k_lost;
      if (k_rerun || k_lost)
        resume_failures.push_back(
            fmt::format("trial {}: job {}: {} settled variants rerun, {} lost", k.trial + 1, j.id,
                        k_rerun, k_lost));
      if (k.phase == "mid-run" && k_kept > 0 && !k_rerun && !k_lost) ++resumed;
      if (k.run_status == RunStatus::kFinished) {
        auto info = evidence->run(k.run_id);
        if (!info || info->ended_ms != k.run_ended_ms) {
          ++finished_rerun;
          resume_failures.push_back(
              fmt::format("trial {}: job {}: its finished run ran again", k.trial + 1, j.id));
        }
      }
    }
    int mid_run = phases["mid-run"];

    std::string phase_text;
    for (const auto& p : {"in_progress unanswered", "before run", "run starting", "mid-run",
                          "after run", "completed unanswered", "idle"})
      if (phases[p])
        phase_text += fmt::format("{}{} {}", phase_text.empty() ? "" : ", ", phases[p], p);
    std::string ip_text;
    for (const auto& [n, count] : in_progress_per_job)
      ip_text += fmt::format("{}{} job(s) x{}", ip_text.empty() ? "" : ", ", count, n);
    double restart_avg = 0;
    for (const auto& k : kills_) restart_avg += k.restart_s;
    if (!kills_.empty()) restart_avg /= kills_.size();

    int failures = 0;
    auto row = [&](const std::string& what, const std::string& value, const std::string& expect,
                   std::optional<bool> ok) {
      if (ok && !*ok) ++failures;
      std::cout << fmt::format("{:<52} {:>10}  {:<9} {}\n", what, value, expect,
                               !ok   ? ""
                               : *ok ? "ok"
                                     : "FAIL");
    };
    auto n = [](auto v) { return fmt::format("{}", v); };
    int d = dispatched_;
    std::cout << fmt::format("\nagent chaos: {} trials, seed {}, {} SIGKILLs ({}), {:.0f} s\n",
                             o_.trials, o_.seed, kills_.size(), phase_text, wall_s);
    std::cout << fmt::format("{:<52} {:>10}  {:<9} {}\n", "", "value", "expected", "");
    row("jobs dispatched (webhooks the relay accepted)", n(d), "", std::nullopt);
    row("jobs done in the agent's queue", n(jobs_done), "= " + n(d), jobs_done == d);
    row("jobs whose completed the relay applied exactly once", n(exactly_once), "= " + n(d),
        exactly_once == d);
    row("jobs with 0 or >1 completed applied", n(not_once.size()), "= 0", not_once.empty());
    row("completed callbacks sent (incl. exact re-sends)", n(completed_sent), "", std::nullopt);
    row("  re-sends the relay answered as duplicates", n(completed_resent),
        fmt::format("({})", phases["completed unanswered"]), std::nullopt);
    row("callbacks the relay refused (non-2xx)", n(refused), "= 0", refused == 0);
    row("in_progress callbacks per job", ip_text, "", std::nullopt);
    row("  re-sends the relay answered as duplicates", n(in_progress_resent),
        fmt::format("({})", phases["in_progress unanswered"]), std::nullopt);
    row("jobs concluded success", n(succeeded), "= " + n(d), succeeded == d);
    row("relay records: completed, success, 260/260 passed", n(relay_ok), "= " + n(d),
        relay_ok == d);
    row("runs finished, verdict success, 260 results", n(runs_ok), "= " + n(d), runs_ok == d);
    row("kills mid-run (some variants settled)", n(mid_run), ">= 1", mid_run >= 1);
    row("  of which resumed, every settled variant kept", n(resumed), "= " + n(mid_run),
        resumed == mid_run);
    row("variants settled before a kill, kept after it", n(kept), "", std::nullopt);
    row("variants settled before a kill, rerun or lost", n(rerun + lost), "= 0", rerun + lost == 0);
    row("run id changed across a kill", n(id_changed), "= 0", id_changed == 0);
    row("finished runs run again after a kill", n(finished_rerun), "= 0", finished_rerun == 0);
    row("processes that outlived the killed agent", n(survivors), "= 0", survivors == 0);
    row("agent restart to healthy (mean s)", fmt::format("{:.2f}", restart_avg), "", std::nullopt);
    auto list = [](const char* title, const std::vector<std::string>& items) {
      if (items.empty()) return;
      std::cout << title << ":\n";
      for (const auto& i : items) std::cout << "  " << i << "\n";
    };
    list("jobs with 0 or >1 completed", not_once);
    list("refused callbacks", refusals);
    list("jobs not successful", not_success);
    list("relay records off", bad_relay);
    list("runs off", bad_runs);
    list("resume failures", resume_failures);
    list("survivors", survivor_list);
    std::cout << (failures ? fmt::format("FAIL: {} invariant(s) broken\n", failures)
                           : std::string("all invariants hold\n"));
    if (failures) std::cout << log_tail("agent.log", 6000) << "\n";
    return failures ? 1 : 0;
  }

  Options o_;
  std::mt19937_64 rng_;
  std::string dir_;
  std::string store_uri_;
  int agent_port_ = 0;
  std::unique_ptr<GitHubStandin> standin_;
  std::unique_ptr<OidcIssuerStandin> oidc_;
  std::unique_ptr<RelayProcess> relay_;
  std::unique_ptr<CallbackProxy> proxy_;
  std::optional<Subprocess> agent_;
  nlohmann::json pr_template_;
  int dispatched_ = 0;
  double last_restart_s_ = 0;
  std::vector<Kill> kills_;
};

int main(int argc, char** argv) {
  CLI::App app{"SIGKILL a real ootci agent mid-run, N times: every job completes exactly once"};
  Options o;
  o.torch_root = std::getenv("TORCH_ROOT") ? std::getenv("TORCH_ROOT") : OOTCI_TORCH_ROOT;
  o.backend_dir = source_dir() + "/examples/reference-backend";
  app.add_option("--trials", o.trials, "kill/restart cycles, one job each")
      ->check(CLI::Range(1, 150));
  app.add_option("--seed", o.seed, "seed of the kill moments and webhook timing");
  app.add_option("--max-delay-ms", o.max_delay_ms,
                 "kill at a uniform moment this long after a job's run starts")
      ->check(CLI::Range(0, 600000));
  app.add_option("--torch-root", o.torch_root, "upstream PyTorch tree (default $TORCH_ROOT)");
  app.add_option("--backend", o.backend_dir, "the reference backend's folder");
  app.add_option("--callback-share", o.callback_share,
                 "share of trials that kill while the relay's answer to the job's in_progress or "
                 "completed is held back (half each)")
      ->check(CLI::Range(0.0, 1.0));
  CLI11_PARSE(app, argc, argv);
  if (!fs::exists(fs::path(o.torch_root) / "test/test_view_ops.py")) {
    std::cerr << "error: --torch-root must name the upstream PyTorch tree (scripts/setup)\n";
    return 2;
  }
  try {
    Chaos chaos(o);
    return chaos.run();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace ootci::bench::agent_chaos
