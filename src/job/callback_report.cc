#include "job/callback_report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/callback_caps.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/subprocess.h"
#include "base/text.h"
#include "base/time.h"
#include "base/utf8.h"
#include "evidence/baseline.h"
#include "evidence/judge.h"
#include "net/http_client.h"

namespace ootci {
namespace {

// A token command that prints nothing for this long is hung, not slow.
constexpr int kTokenCommandTimeoutMs = 60000;
// Retry waits: 1 s, 2 s, 4 s, ... capped, as the header promises; a relay's Retry-After is
// honoured up to a minute, since a GitHub OIDC token only lives five.
constexpr int64_t kFirstBackoffMs = 1000;
constexpr int64_t kMaxBackoffMs = 30000;
constexpr int64_t kMaxRetryAfterS = 60;
// What the relay wraps around a body when it forwards it to the HUD (the trusted envelope).
constexpr size_t kEnvelopeBytes = 16 * 1024;

bool is_decimal(const std::string& s) {
  // At most 18 digits, so the value fits an int64 wherever it is parsed.
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Runs argv and returns its stdout; stderr goes to the error message when it fails. Pipes, not
// files: the token never touches the disk.
std::string command_stdout(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  CapturedRun r = run_captured(o, kTokenCommandTimeoutMs);
  std::string cmd = argv.front();
  if (r.timed_out)
    throw Error(fmt::format("report.token_command {}: no answer within {} s", cmd,
                            kTokenCommandTimeoutMs / 1000));
  if (!r.ok())
    throw Error(fmt::format(
        "report.token_command {} failed ({}): {}", cmd,
        r.exit_code > 128 ? std::string("killed by a signal") : fmt::format("exit {}", r.exit_code),
        trim(r.err)));
  return r.out;
}

std::string github_actions_token(const std::string& request_url, const std::string& bearer,
                                 const std::string& audience, int timeout_s) {
  HttpRequest req;
  req.url = request_url + (request_url.find('?') == std::string::npos ? "?" : "&") +
            "audience=" + url_encode(audience);
  req.headers = {{"Authorization", "bearer " + bearer}, {"Accept", "application/json"}};
  req.timeout_ms = timeout_s * 1000;
  HttpResult r = http_send(req);
  if (r.status == 0)
    throw Error("GitHub Actions OIDC token request (ACTIONS_ID_TOKEN_REQUEST_URL) failed: " +
                r.error);
  if (r.status != 200)
    throw Error(fmt::format("GitHub Actions OIDC token request answered HTTP {}: {}", r.status,
                            trim(r.body)));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("value") || !j["value"].is_string() ||
      j["value"].get<std::string>().empty())
    throw Error("GitHub Actions OIDC token response has no \"value\": " + trim(r.body));
  return j["value"].get<std::string>();
}

// The workflow fields a callback must carry, as the relay checks them.
void check_workflow_identity(const WorkflowIdentity& w) {
  if (w.name.empty()) throw Error("workflow.name: required");
  // GitHub's run ids are integers; Buildkite's are build UUIDs (the relay takes either).
  if (!is_callback_run_id(w.run_id))
    throw Error(fmt::format("workflow.run_id: must be {}, got '{}'", kCallbackRunIdRule, w.run_id));
  if (w.run_id.find_first_not_of('0') == std::string::npos)
    throw Error("workflow.run_id: must not be 0 (reserved for dispatch records)");
  if (!is_decimal(w.run_attempt) || std::stoll(w.run_attempt) < 1)
    throw Error(
        fmt::format("workflow.run_attempt: must be a positive integer, got '{}'", w.run_attempt));
}

// The callback's `workflow` object; `outcome` is set when status is completed.
nlohmann::json workflow_object(JobStatus status, const WorkflowIdentity& w,
                               const std::optional<RunOutcome>& outcome) {
  bool completed = status == JobStatus::kCompleted;
  auto or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  nlohmann::json wf = {
      {"schema_version", "1"},
      {"status", to_string(status)},
      {"conclusion", completed ? nlohmann::json(to_string(outcome->conclusion)) : nlohmann::json()},
      {"name", w.name},
      {"url", or_null(w.url)},
      {"run_id", w.run_id},
      {"run_attempt", w.run_attempt},
      {"job_name", or_null(w.job_name)},
      {"check_run_id", w.check_run_id.empty() ? w.run_id + "-" + w.run_attempt : w.check_run_id},
      {"started_at", !w.started_at.empty() ? nlohmann::json(w.started_at)
                     : completed           ? nlohmann::json()
                                           : nlohmann::json(iso8601_utc(now_ms()))},
      {"completed_at", !completed                ? nlohmann::json()
                       : !w.completed_at.empty() ? nlohmann::json(w.completed_at)
                                                 : nlohmann::json(iso8601_utc(now_ms()))},
      {"test_results", nullptr}};
  // An outcome without results (a build that failed before any test ran) has no summary.
  if (completed && (outcome->total || outcome->passed || outcome->failed || outcome->skipped))
    wf["test_results"] = {{"passed", outcome->passed},
                          {"failed", outcome->failed},
                          {"skipped", outcome->skipped},
                          {"total", outcome->total}};
  return wf;
}

// A completed body's failed_tests_detail: 1,000 entries of 1 KB messages plus the upstream
// webhook can pass the 2 MB a body may have, so the first entries (newly failing) that fit.
void add_failed_tests_detail(nlohmann::json& body, const RunOutcome& outcome) {
  if (!outcome.failed_tests.is_array() || outcome.failed_tests.empty()) return;
  size_t fixed = kEnvelopeBytes + body.dump().size() +
                 (outcome.triage_verdict.is_null() ? 0 : outcome.triage_verdict.dump().size());
  size_t room = fixed < kMaxCallbackBodyBytes ? kMaxCallbackBodyBytes - fixed : 0;
  nlohmann::json kept = nlohmann::json::array();
  size_t used = std::string(R"(,"failed_tests_detail":[])").size();
  for (const auto& entry : outcome.failed_tests) {
    used += entry.dump().size() + 1;
    if (used > room) break;
    kept.push_back(entry);
  }
  if (!kept.empty()) body["failed_tests_detail"] = std::move(kept);
}

}  // namespace

WorkflowIdentity workflow_from_environment(const EnvLookup& env) {
  WorkflowIdentity w;
  auto get = [&](const char* name) { return env(name).value_or(""); };
  w.name = get("GITHUB_WORKFLOW");
  w.run_id = get("GITHUB_RUN_ID");
  std::string server = get("GITHUB_SERVER_URL"), repo = get("GITHUB_REPOSITORY");
  if (!server.empty() && !repo.empty() && !w.run_id.empty())
    w.url = fmt::format("{}/{}/actions/runs/{}", server, repo, w.run_id);
  if (auto attempt = env("GITHUB_RUN_ATTEMPT")) w.run_attempt = *attempt;
  w.job_name = get("GITHUB_JOB");
  w.check_run_id = get("OOTCI_CHECK_RUN_ID");
  return w;
}

RunOutcome outcome_of_run(EvidenceStore& store, const std::string& run_id) {
  std::optional<RunInfo> run = store.run(run_id);
  if (!run) throw Error(fmt::format("run {} not found in the evidence store", run_id));
  std::vector<TestResult> results = store.results(run->id);
  Verdict verdict = judge(results, baseline_of(store, *run).results_or_null());

  RunOutcome o;
  if (run->status == RunStatus::kInterrupted)
    o.conclusion = Conclusion::kCancelled;
  else if (run->status == RunStatus::kRunning)
    o.conclusion = Conclusion::kFailure;  // it died without finishing, as `ootci judge` says
  else
    o.conclusion = verdict.conclusion;
  o.total = static_cast<int64_t>(results.size());
  o.failed = static_cast<int64_t>(verdict.failing.size());
  o.skipped = std::count_if(results.begin(), results.end(),
                            [](const TestResult& r) { return r.outcome == Outcome::kSkipped; });
  o.passed = o.total - o.failed - o.skipped;
  // The judge lists newly failing tests first: those are the ones a cut must keep.
  for (size_t i = 0; i < std::min(verdict.failing.size(), kMaxFailedTests); ++i) {
    const FailingTest& f = verdict.failing[i];
    o.failed_tests.push_back({{"name", f.test_id},
                              {"mode", mode_text(f.mode)},
                              {"outcome", to_string(f.outcome)},
                              {"error_class", f.error_class},
                              {"message", truncate_utf8(f.message, kMaxTestMessageBytes)},
                              {"newly", f.newly}});
  }
  return o;
}

JobStatus parse_callback_status(std::string_view text) {
  if (auto s = parse_job_status(text)) return *s;
  throw Error(fmt::format("workflow.status: must be in_progress or completed, got '{}'", text));
}

nlohmann::json build_callback_body(const nlohmann::json& client_payload, JobStatus status,
                                   const WorkflowIdentity& w,
                                   const std::optional<RunOutcome>& outcome,
                                   const std::string& artifact_url, const std::string& relay) {
  if (!client_payload.is_object()) throw Error("client_payload: expected an object");
  auto delivery = client_payload.find("delivery_id");
  if (delivery == client_payload.end() || !delivery->is_string() ||
      delivery->get<std::string>().empty())
    throw Error("client_payload.delivery_id: missing (expected a non-empty string)");
  auto payload = client_payload.find("payload");
  if (payload == client_payload.end() || !payload->is_object())
    throw Error("client_payload.payload: missing (expected an object)");
  check_workflow_identity(w);
  bool completed = status == JobStatus::kCompleted;
  if (completed && !outcome) throw Error("workflow.conclusion: a completed callback needs one");
  nlohmann::json wf = workflow_object(status, w, outcome);
  if (!artifact_url.empty()) wf["artifact_url"] = artifact_url;

  nlohmann::json body = {{"delivery_id", *delivery}, {"payload", *payload}, {"workflow", wf}};
  if (auto e = client_payload.find("event_type"); e != client_payload.end()) {
    if (!e->is_string()) throw Error("client_payload.event_type: expected a string");
    body["event_type"] = *e;
  }
  if (auto t = client_payload.find("callback_token"); t != client_payload.end() && t->is_string())
    body["callback_token"] = *t;
  // Beside `workflow`, as the relay reads them (RFC-0054's additive fields).
  if (completed) add_failed_tests_detail(body, *outcome);
  if (completed && !outcome->triage_verdict.is_null()) {
    if (relay == "crcr") {
      nlohmann::json v = outcome->triage_verdict;
      if (v.contains("analyzer") && v["analyzer"].is_string())
        v["analyzer"] = {{"name", v["analyzer"]}};  // upstream's schema takes an object
      body["workflow"]["triage_verdict"] = std::move(v);
    } else {
      body["triage_verdict"] = outcome->triage_verdict;
    }
  }
  return body;
}

std::string fetch_oidc_token(const ReportSettings& settings, const EnvLookup& env) {
  if (!settings.token_file.empty()) {
    std::ifstream in(settings.token_file, std::ios::binary);
    if (!in) throw Error(fmt::format("report.token_file {}: cannot read it", settings.token_file));
    std::string token = trim(read_file_or_empty(settings.token_file));
    if (token.empty()) throw Error(fmt::format("report.token_file {}: empty", settings.token_file));
    return token;
  }
  if (!settings.token_command.empty()) {
    std::vector<std::string> argv = settings.token_command;
    for (auto& arg : argv)
      for (size_t at; (at = arg.find("{audience}")) != std::string::npos;)
        arg.replace(at, 10, settings.audience);
    std::string token = trim(command_stdout(argv));
    if (token.empty())
      throw Error(fmt::format("report.token_command {}: printed no token", argv.front()));
    return token;
  }
  auto url = env("ACTIONS_ID_TOKEN_REQUEST_URL");
  auto bearer = env("ACTIONS_ID_TOKEN_REQUEST_TOKEN");
  if (url && bearer)
    return github_actions_token(*url, *bearer, settings.audience, settings.timeout_s);
  throw Error(
      "no OIDC token: set report.token_file or report.token_command, or run in GitHub Actions "
      "with permissions: id-token: write");
}

PostOutcome post_callback(const ReportSettings& settings, const std::string& token,
                          const nlohmann::json& body,
                          const std::function<void(int64_t)>& sleep_ms) {
  if (settings.callback_url.empty())
    throw Error("report.callback_url: not set (the relay's <url>/github/callback)");
  if (settings.relay != "ootci" && settings.relay != "crcr")
    throw Error(fmt::format("report.relay: must be ootci or crcr, got '{}'", settings.relay));
  // PyTorch's relay answers a repeated callback 400, so only our idempotent relay gets retries.
  int max_attempts = settings.relay == "ootci" ? std::max(1, settings.max_attempts) : 1;
  HttpRequest req;
  req.method = "POST";
  req.url = settings.callback_url;
  req.headers = {{"Authorization", "Bearer " + token}};
  req.body = body.dump();  // once: every attempt sends the same bytes, so a repeat is a duplicate
  req.timeout_ms = std::max(1, settings.timeout_s) * 1000;

  PostOutcome out;
  int64_t backoff_ms = kFirstBackoffMs;
  while (true) {
    ++out.attempts;
    HttpResult r = http_send(req);
    out.status = r.status;
    out.body = r.body;
    out.error = r.error;
    bool transient = r.status == 0 || r.status == 429 || r.status >= 500;
    if (out.ok() || !transient || out.attempts >= max_attempts) return out;
    int64_t wait_ms = backoff_ms;
    if (auto after = retry_after_seconds(r)) wait_ms = std::min(*after, kMaxRetryAfterS) * 1000;
    backoff_ms = std::min(backoff_ms * 2, kMaxBackoffMs);
    spdlog::warn("callback attempt {}/{} got {}; retrying in {} ms", out.attempts, max_attempts,
                 r.status ? fmt::format("HTTP {}", r.status) : r.error, wait_ms);
    if (sleep_ms)
      sleep_ms(wait_ms);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
}

}  // namespace ootci
