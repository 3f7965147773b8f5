#include "job/agent.h"

#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/metrics.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "evidence/evidence_path.h"
#include "evidence/evidence_store.h"
#include "evidence/report_page.h"
#include "job/agent_dispatch.h"
#include "job/agent_queue.h"
#include "job/callback_report.h"
#include "job/gate.h"
#include "net/reply.h"
#include "select/selection.h"
#include "select/waves.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

nlohmann::json job_json(const AgentJob& j) {
  auto ms = [](int64_t v) { return v ? nlohmann::json(iso8601_utc(v)) : nlohmann::json(nullptr); };
  return {{"id", j.id},
          {"delivery_id", j.delivery_id},
          {"event_type", j.event_type},
          {"state", to_string(j.state)},
          {"should_build", j.should_build},
          {"reason", j.reason},
          {"upstream_sha", j.upstream_sha},
          {"pr_number", j.pr_number},
          {"base_sha", j.base_sha},
          {"supersede_key", j.supersede_key},
          {"attempt", j.attempt},
          {"run_id", j.run_id},
          {"in_progress_reported", j.in_progress_reported},
          {"conclusion", to_string(j.conclusion)},
          {"error", j.error},
          {"received_at", ms(j.received_ms)},
          {"started_at", ms(j.started_ms)},
          {"ended_at", ms(j.ended_ms)}};
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("exit {}", WEXITSTATUS(status));
}

}  // namespace

struct Agent::Impl {
  AgentConfig config;
  BackendConfig backend;
  std::string ootci_binary;
  std::string secret;
  AgentQueue queue;
  Metrics metrics{{"ootci_agent_job_seconds"}};
  httplib::Server http;

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::map<int64_t, Subprocess*> children;  // job id -> the process it is waiting on
  std::set<int64_t> cancelled;              // running jobs a newer dispatch superseded
  std::vector<std::thread> workers;

  Impl(AgentConfig c, BackendConfig b, std::string binary)
      : config(std::move(c)),
        backend(std::move(b)),
        ootci_binary(std::move(binary)),
        queue((fs::create_directories(fs::path(config.state).parent_path()), config.state)) {}

  // ---- intake ----

  // A signed repository_dispatch body: queued (202), a duplicate (200) or refused (401, 400).
  Reply on_dispatch(const std::string& signature, const std::string& raw_body) {
    AgentDispatch d =
        parse_agent_dispatch(secret, signature, raw_body, backend.gate, backend.device_type,
                             command_branch_head_resolver(backend.gate));
    if (!d.ok()) {
      metrics.inc("ootci_agent_dispatches_total",
                  d.status == 401 ? "result=\"bad_signature\"" : "result=\"invalid\"");
      return json_reply(d.status, {{"ok", false}, {"detail", d.detail}});
    }
    const GateDecision& gate = d.gate;
    AgentJob& job = d.job;
    job.received_ms = now_ms();
    if (!gate.should_build) job.ended_ms = job.received_ms;
    auto [id, inserted] = queue.add(job);
    if (!inserted) {
      metrics.inc("ootci_agent_dispatches_total", "result=\"duplicate\"");
      return json_reply(200, {{"ok", true}, {"job", id}, {"duplicate", true}});
    }
    // A newer build for the same PR makes older work moot, and so does closing the PR. A
    // dispatch that builds nothing (a label, an edit) leaves running work alone.
    if (!gate.supersede_key.empty() && (gate.should_build || gate.action == "closed"))
      cancel_running(queue.supersede(gate.supersede_key, id, now_ms()), id);
    metrics.inc("ootci_agent_dispatches_total",
                gate.should_build ? "result=\"queued\"" : "result=\"skipped\"");
    spdlog::info("dispatch {} ({}): job {} {}: {}", job.delivery_id, job.event_type, id,
                 to_string(job.state), gate.reason);
    wake.notify_all();
    return json_reply(
        202,
        {{"ok", true}, {"job", id}, {"should_build", gate.should_build}, {"reason", gate.reason}});
  }

  void cancel_running(const std::vector<int64_t>& ids, int64_t newer) {
    std::lock_guard lock(mu);
    for (int64_t id : ids) {
      spdlog::info("job {}: superseded by job {}; stopping it", id, newer);
      cancelled.insert(id);
      // The run stops on SIGTERM, marks itself interrupted and kills its tests.
      if (auto it = children.find(id); it != children.end()) it->second->signal(SIGTERM);
    }
  }

  bool is_cancelled(int64_t id) {
    std::lock_guard lock(mu);
    return cancelled.count(id) > 0;
  }

  // ---- jobs ----

  void worker_loop() {
    while (true) {
      std::optional<AgentJob> job;
      {
        std::unique_lock lock(mu);
        if (stopping) return;
      }
      job = queue.claim(now_ms());
      if (!job) {
        std::unique_lock lock(mu);
        wake.wait_for(lock, std::chrono::seconds(1));
        continue;
      }
      try {
        execute(*job);
      } catch (const std::exception& e) {
        spdlog::error("job {}: {}", job->id, e.what());
        queue.finish(job->id, JobState::kDone, Conclusion::kFailure, e.what(), now_ms());
      }
    }
  }

  WorkflowIdentity identity(const AgentJob& job) const {
    WorkflowIdentity w;
    w.name = backend.report.workflow_name;
    w.url = fmt::format("{}/jobs/{}", config.public_url, job.id);
    w.run_id = std::to_string(job.id);
    w.run_attempt = std::to_string(job.attempt);
    w.job_name = config.job_name;
    w.check_run_id = fmt::format("{}-{}", job.id, job.attempt);
    w.started_at = iso8601_utc(job.started_ms);
    return w;
  }

  // Sends one callback; a failure is logged and returned, never thrown: the tests still run.
  std::string report(const AgentJob& job, JobStatus status,
                     const std::optional<RunOutcome>& outcome) {
    if (backend.report.callback_url.empty()) return "";
    const char* word = to_string(status);
    std::string label = fmt::format("status=\"{}\"", word);
    try {
      // Without a configured artifact store, the run's report page here is the artifact.
      std::string artifact_url = backend.report.artifact_url;
      if (artifact_url.empty() && status == JobStatus::kCompleted && outcome && !job.run_id.empty())
        artifact_url = fmt::format("{}/jobs/{}/report", config.public_url, job.id);
      nlohmann::json body =
          build_callback_body(nlohmann::json::parse(job.client_payload), status, identity(job),
                              outcome, artifact_url, backend.report.relay);
      std::string token = fetch_oidc_token(backend.report, process_env);
      PostOutcome sent = post_callback(backend.report, token, body);
      if (sent.ok()) {
        metrics.inc("ootci_agent_reports_total", label + ",result=\"ok\"");
        spdlog::info("job {}: reported {} (HTTP {})", job.id, word, sent.status);
        return "";
      }
      metrics.inc("ootci_agent_reports_total", label + ",result=\"failed\"");
      std::string why =
          sent.status ? fmt::format("HTTP {} {}", sent.status, sent.body) : sent.error;
      spdlog::warn("job {}: {} report failed after {} attempt(s): {}", job.id, word, sent.attempts,
                   why);
      return fmt::format("{} report failed: {}", word, why);
    } catch (const std::exception& e) {
      metrics.inc("ootci_agent_reports_total", label + ",result=\"failed\"");
      spdlog::warn("job {}: {} report failed: {}", job.id, word, e.what());
      return fmt::format("{} report failed: {}", word, e.what());
    }
  }

  // Runs argv for `job` as a stoppable child; returns its wait status.
  int run_child(const AgentJob& job, std::vector<std::string> argv, const std::string& log_path) {
    SpawnOptions options;
    options.argv = std::move(argv);
    options.env = {{"OOTCI_UPSTREAM_SHA", job.upstream_sha},
                   {"OOTCI_BASE_SHA", job.base_sha},
                   {"OOTCI_PR_NUMBER", std::to_string(job.pr_number)},
                   {"OOTCI_DELIVERY_ID", job.delivery_id}};
    options.output_file = log_path;
    options.new_process_group = true;
    options.die_with_parent = true;
    Subprocess child = Subprocess::spawn(options);
    {
      std::lock_guard lock(mu);
      children[job.id] = &child;
      // A cancel or stop that came before the child existed.
      if (cancelled.count(job.id) || stopping) child.signal(SIGTERM);
    }
    int status = child.wait();
    std::lock_guard lock(mu);
    children.erase(job.id);
    return status;
  }

  void execute(AgentJob job) {
    spdlog::info("job {}: starting (upstream {}, PR {})", job.id, job.upstream_sha, job.pr_number);
    int64_t start_ms = now_ms();
    std::vector<std::string> errors;
    if (!job.in_progress_reported) note(errors, report_in_progress(job));
    fs::create_directories(config.jobs_dir);
    std::string log_path = fmt::format("{}/{}.log", config.jobs_dir, job.id);
    std::optional<RunOutcome> outcome = run_tests(job, log_path, errors);
    if (stopped() && !is_cancelled(job.id)) return;
    complete(job, std::move(outcome), std::move(errors), start_ms);
  }

  static void note(std::vector<std::string>& errors, const std::string& error) {
    if (!error.empty()) errors.push_back(error);
  }

  // Sends the job's in_progress callback and remembers that it went; returns the failure, if any.
  std::string report_in_progress(AgentJob& job) {
    std::string failed = report(job, JobStatus::kInProgress, std::nullopt);
    if (failed.empty()) {
      queue.set_in_progress_reported(job.id);
      job.in_progress_reported = true;
    }
    return failed;
  }

  // The job's tests: the prepare command, `ootci run` (resumed where the job's run exists), and
  // the attribution of a red run. Returns the run's outcome, or nullopt when no run exists.
  std::optional<RunOutcome> run_tests(AgentJob& job, const std::string& log_path,
                                      std::vector<std::string>& errors) {
    auto store = EvidenceStore::open(evidence_path(backend));
    if (!config.prepare_command.empty()) {
      int status = run_child(job, config.prepare_command, log_path);
      if (status != 0) {
        note(errors,
             fmt::format("prepare_command failed: {} (log: {})", exit_text(status), log_path));
        return std::nullopt;
      }
    }
    if (is_cancelled(job.id) || stopped()) return std::nullopt;
    if (job.run_id.empty()) {
      job.run_id = new_run_id(now_ms());
      queue.set_run(job.id, job.run_id);
    }
    std::optional<RunInfo> prior = store->run(job.run_id);
    if (!prior || prior->status != RunStatus::kFinished) {
      std::vector<std::string> argv = {
          ootci_binary, "run", "--config", backend.path, prior ? "--resume" : "--run-id",
          job.run_id};
      // A resumed run keeps its own selection and second stage (its manifest).
      if (!prior)
        if (auto selection = select_tests(job, log_path)) {
          argv.push_back("--select");
          argv.push_back(*selection);
        }
      int status = run_child(job, argv, log_path);
      bool tests_ran =
          WIFEXITED(status) && (WEXITSTATUS(status) <= 1 || WEXITSTATUS(status) == 130);
      if (!tests_ran)
        note(errors, fmt::format("ootci run failed: {} (log: {})", exit_text(status), log_path));
    }
    if (stopped() && !is_cancelled(job.id)) {
      spdlog::info("job {}: agent stopping; the job resumes at the next start", job.id);
      return std::nullopt;
    }
    std::optional<RunOutcome> outcome;
    if (store->run(job.run_id)) outcome = outcome_of_run(*store, job.run_id);
    if (outcome && outcome->conclusion == Conclusion::kFailure && config.attribute &&
        !is_cancelled(job.id) && !stopped())
      outcome->triage_verdict = attribute(job, log_path);
    return outcome;
  }

  // An open PR's tests, when select.pull_requests is staged: `ootci select changed --staged` over
  // what the PR changes upstream, which `ootci run` runs in two waves, the second only when the
  // first raised (docs/run.md, "Waves"). Returns the selection's path, or nullopt for the full
  // plan: pushes and nightlies, the switch off, or a selection that failed or selects nothing
  // (running more, never less). Why goes to the job's log.
  std::optional<std::string> select_tests(const AgentJob& job, const std::string& log_path) {
    GateDecision gate;
    gate.should_build = true;
    gate.base_sha = job.base_sha;
    if (dispatch_selection(gate, backend.select) != "staged") return std::nullopt;
    std::string path = fmt::format("{}/{}.selection.json", config.jobs_dir, job.id);
    int status =
        run_child(job,
                  {ootci_binary, "select", "changed", "--config", backend.path, "--upstream",
                   job.base_sha + ".." + job.upstream_sha, "--staged", "-o", path},
                  log_path);
    std::string fallback;
    if (status != 0)
      fallback = fmt::format("ootci select changed failed ({})", exit_text(status));
    else
      try {
        if (wave_empty(load_selection(path)))
          fallback =
              "the selection's first wave is empty (nothing the evidence ties to this change)";
      } catch (const Error& e) {
        fallback = e.what();
      }
    if (fallback.empty()) {
      spdlog::info("job {}: staged selection of {}..{}: {}", job.id, job.base_sha, job.upstream_sha,
                   path);
      return path;
    }
    spdlog::warn("job {}: {}; running the full plan (log: {})", job.id, fallback, log_path);
    append_to_file(log_path, fmt::format("ootci agent: {}; running the full plan\n", fallback));
    return std::nullopt;
  }

  // The job's end: the completed callback, the queue's record of it, and the metrics.
  void complete(AgentJob& job, std::optional<RunOutcome> outcome, std::vector<std::string> errors,
                int64_t start_ms) {
    bool cancelled_now = is_cancelled(job.id);
    if (!outcome) {
      outcome = RunOutcome{};
      outcome->conclusion = cancelled_now ? Conclusion::kCancelled : Conclusion::kFailure;
    }
    if (cancelled_now) outcome->conclusion = Conclusion::kCancelled;
    // The completed callback needs a matching in_progress; without one the relay refuses it. An
    // in_progress that failed at the start (no token, the relay down) is sent again first, with
    // the same identity and started_at, so a transient failure does not lose the result.
    if (!job.in_progress_reported && !backend.report.callback_url.empty()) report_in_progress(job);
    if (job.in_progress_reported) note(errors, report(job, JobStatus::kCompleted, outcome));
    std::string error;
    for (const auto& e : errors) error += (error.empty() ? "" : "; ") + e;
    queue.finish(job.id, cancelled_now ? JobState::kCancelled : JobState::kDone,
                 outcome->conclusion, error, now_ms());
    {
      std::lock_guard lock(mu);
      cancelled.erase(job.id);
    }
    metrics.inc("ootci_agent_jobs_total",
                fmt::format("conclusion=\"{}\"", to_string(outcome->conclusion)));
    metrics.observe("ootci_agent_job_seconds", (now_ms() - start_ms) / 1000.0);
    spdlog::info("job {}: {}{}", job.id, to_string(outcome->conclusion),
                 error.empty() ? "" : " (" + error + ")");
  }

  bool stopped() {
    std::lock_guard lock(mu);
    return stopping;
  }

  // `ootci attribute` on the job's red run; its triage_verdict, or null when it wrote none.
  nlohmann::json attribute(const AgentJob& job, const std::string& log_path) {
    int status = run_child(
        job, {ootci_binary, "attribute", "--config", backend.path, "--run", job.run_id}, log_path);
    if (status != 0) {
      spdlog::warn("job {}: ootci attribute failed: {} (log: {})", job.id, exit_text(status),
                   log_path);
      return nullptr;
    }
    std::string path = fmt::format("{}/runs/{}/triage_verdict.json", backend.workspace, job.run_id);
    nlohmann::json verdict = nlohmann::json::parse(read_file_or_empty(path), nullptr, false);
    return verdict.is_object() ? verdict : nlohmann::json();
  }

  // ---- HTTP ----

  void routes() {
    http.set_tcp_nodelay(true);
    http.set_payload_max_length(25 * 1024 * 1024);  // GitHub's webhook size cap
    http.Post("/dispatch", [this](const httplib::Request& req, httplib::Response& res) {
      try {
        send_reply(res, on_dispatch(req.get_header_value("X-Ootci-Signature-256"), req.body));
      } catch (const std::exception& e) {
        spdlog::error("dispatch: {}", e.what());
        send_reply(res, json_reply(500, {{"ok", false}, {"detail", "internal error"}}));
      }
    });
    http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      try {
        auto counts = queue.count_by_state();
        send_reply(res, json_reply(200, {{"ok", true},
                                         {"queued", counts["queued"]},
                                         {"running", counts["running"]}}));
      } catch (const std::exception& e) {
        send_reply(res, json_reply(503, {{"ok", false}, {"detail", e.what()}}));
      }
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::vector<std::pair<std::string, double>> gauges;
      try {
        for (const auto& [state, n] : queue.count_by_state())
          gauges.emplace_back(fmt::format("ootci_agent_jobs_{}", state), double(n));
      } catch (const std::exception&) {
      }
      res.set_content(metrics.render(gauges), "text/plain; version=0.0.4");
    });
    http.Get("/api/jobs", [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json jobs = nlohmann::json::array();
      for (const auto& j : queue.recent(200)) jobs.push_back(job_json(j));
      send_reply(res, json_reply(200, jobs));
    });
    // The job's run report, as `ootci run` wrote it into the run folder.
    http.Get(R"(/jobs/(\d+)/report)", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = queue.get(std::stoll(req.matches[1]));
      if (!job) return send_reply(res, json_reply(404, {{"ok", false}, {"detail", "no such job"}}));
      std::string html =
          job->run_id.empty()
              ? ""
              : read_file_or_empty(run_folder(backend, job->run_id) + "/report.html");
      if (html.empty())
        return send_reply(
            res, json_reply(404, {{"ok", false}, {"detail", "the job's run has no report yet"}}));
      send_html(res, 200, html);
    });
    // The device's landing page, from the evidence store as it is now.
    http.Get("/device", [this](const httplib::Request&, httplib::Response& res) {
      try {
        auto store = EvidenceStore::open(evidence_path(backend));
        DevicePage page = gather_device_page(*store, backend.name);
        add_bucket_changes(page, bucket_changes_path(backend));
        send_html(res, 200, render_device_page(page));
      } catch (const std::exception& e) {
        send_reply(res, json_reply(503, {{"ok", false}, {"detail", e.what()}}));
      }
    });
    http.Get(R"(/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = queue.get(std::stoll(req.matches[1]));
      if (!job) return send_reply(res, json_reply(404, {{"ok", false}, {"detail", "no such job"}}));
      nlohmann::json j = job_json(*job);
      j["log_tail"] = read_file_tail(fmt::format("{}/{}.log", config.jobs_dir, job->id), 64 * 1024);
      send_reply(res, json_reply(200, j));
    });
  }
};

Agent::Agent(AgentConfig config, BackendConfig backend, std::string ootci_binary)
    : impl_(
          std::make_unique<Impl>(std::move(config), std::move(backend), std::move(ootci_binary))) {}

Agent::~Agent() {
  stop();
}

void Agent::run() {
  Impl& s = *impl_;
  auto secret = process_env(s.config.secret_env);
  if (!secret)
    throw Error(fmt::format("{}: secret_env: environment variable {} is not set", s.config.path,
                            s.config.secret_env));
  s.secret = *secret;
  s.routes();
  if (!s.http.bind_to_port(s.config.listen_host(), s.config.listen_port()))
    throw Error(fmt::format("{}: listen: cannot bind {}", s.config.path, s.config.listen));
  if (int n = s.queue.requeue_running())
    spdlog::info("{} job(s) were running when the last agent stopped; they resume", n);
  for (int i = 0; i < s.config.concurrency; ++i) s.workers.emplace_back([&s] { s.worker_loop(); });
  spdlog::info("agent listening on {} (backend {}, queue {}, {} worker(s))", s.config.listen,
               s.backend.name, s.config.state, s.config.concurrency);
  s.http.listen_after_bind();
}

void Agent::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.stopping) return;
    s.stopping = true;
    for (auto& [id, child] : s.children) child->signal(SIGTERM);
  }
  s.wake.notify_all();
  s.http.stop();
  for (auto& t : s.workers)
    if (t.joinable()) t.join();
}

}  // namespace ootci
