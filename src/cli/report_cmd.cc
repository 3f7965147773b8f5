// `ootci report`: the CRCR callback for a dispatch, in_progress at the start of a job and
// completed at its end, with a run's verdict and failing tests; `ootci report html`: a run's
// report page.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/callback_caps.h"
#include "base/error.h"
#include "base/file_text.h"
#include "base/text.h"
#include "cli/commands.h"
#include "evidence/evidence_path.h"
#include "evidence/report_page.h"
#include "job/callback_report.h"
#include "plan/plan_env.h"

namespace ootci {
namespace {

struct ReportArgs {
  std::string status, payload, config, run, evidence, conclusion, triage;
  std::string callback_url, token_file, audience, relay;
  int max_attempts = 0;
  std::string workflow_name, workflow_url, run_id, run_attempt, job_name, check_run_id;
  std::string started_at, completed_at, artifact_url;
  bool dry_run = false;
};

std::string read_text(const std::string& path, const char* flag) {
  std::optional<std::string> text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("{} {}: cannot read it", flag, path));
  return *text;
}

nlohmann::json read_json(const std::string& path, const char* flag) {
  std::string text = read_text(path, flag);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{} {}: invalid JSON: {}", flag, path, e.what()));
  }
}

nlohmann::json read_triage(const std::string& path) {
  nlohmann::json j = read_json(path, "--triage");
  if (!j.is_object()) throw Error(fmt::format("--triage {}: expected a JSON object", path));
  if (j.dump().size() > kMaxTriageBytes)
    throw Error(fmt::format("--triage {}: larger than {} bytes", path, kMaxTriageBytes));
  return j;
}

void set_if(std::string& field, const std::string& flag) {
  if (!flag.empty()) field = flag;
}

// settings from ootci.yaml's report: section, then the flags.
ReportSettings settings_of(const ReportArgs& a, const std::optional<BackendConfig>& config) {
  ReportSettings s = config ? config->report : ReportSettings{};
  set_if(s.callback_url, a.callback_url);
  set_if(s.token_file, a.token_file);
  set_if(s.audience, a.audience);
  set_if(s.relay, a.relay);
  set_if(s.artifact_url, a.artifact_url);
  if (a.max_attempts > 0) s.max_attempts = a.max_attempts;
  return s;
}

// The flags, then GitHub Actions' environment, then ootci.yaml's workflow name.
WorkflowIdentity identity_of(const ReportArgs& a, const ReportSettings& s) {
  WorkflowIdentity w = workflow_from_environment(process_env);
  if (w.name.empty()) w.name = s.workflow_name;
  set_if(w.name, a.workflow_name);
  set_if(w.url, a.workflow_url);
  set_if(w.run_id, a.run_id);
  set_if(w.run_attempt, a.run_attempt);
  set_if(w.job_name, a.job_name);
  set_if(w.check_run_id, a.check_run_id);
  set_if(w.started_at, a.started_at);
  set_if(w.completed_at, a.completed_at);
  if (w.run_id.empty())
    throw Error("workflow.run_id: not set: give --run-id or run in GitHub Actions (GITHUB_RUN_ID)");
  return w;
}

std::optional<RunOutcome> completed_outcome(const ReportArgs& a, JobStatus status,
                                            const std::optional<BackendConfig>& config) {
  if (status != JobStatus::kCompleted) {
    if (!a.run.empty() || !a.conclusion.empty() || !a.triage.empty())
      throw Error("--run, --conclusion and --triage apply to --status completed");
    return std::nullopt;
  }
  if (a.run.empty() && a.conclusion.empty())
    throw Error("--status completed needs --run RUN (its verdict) or --conclusion");
  // The conclusions GitHub accepts for a check run: the relay passes ours on as is.
  std::optional<Conclusion> conclusion = parse_conclusion(a.conclusion);
  if (!a.conclusion.empty() && !conclusion)
    throw Error(
        fmt::format("--conclusion {}: expected one of {}", a.conclusion, conclusion_names()));
  RunOutcome o;
  std::string triage = a.triage;
  if (!a.run.empty()) {
    std::string db = !a.evidence.empty() ? a.evidence : config ? evidence_path(*config) : "";
    if (db.empty()) throw Error("--run needs --evidence DB or --config ootci.yaml");
    if (!std::filesystem::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
    o = outcome_of_run(*EvidenceStore::open(db), a.run);
    std::string beside = config ? run_folder(*config, a.run) + "/triage_verdict.json" : "";
    if (triage.empty() && !beside.empty() && std::filesystem::exists(beside)) triage = beside;
  }
  if (conclusion) o.conclusion = *conclusion;
  if (!triage.empty()) o.triage_verdict = read_triage(triage);
  return o;
}

struct HtmlArgs {
  std::string run, config, evidence, out, backend;
  bool device = false;
};

// `ootci report html`: the run's report page, as `ootci run` writes it into the run folder.
void report_html(const HtmlArgs& a) {
  std::optional<BackendConfig> config;
  if (!a.config.empty()) config = load_backend_or_exit(a.config);
  std::string db = !a.evidence.empty() ? a.evidence : config ? evidence_path(*config) : "";
  if (db.empty()) throw Error("--run needs --evidence DB or --config ootci.yaml");
  if (!std::filesystem::exists(db)) throw Error(fmt::format("no evidence database at {}", db));
  if (a.device) {
    std::string backend = !a.backend.empty() ? a.backend : config ? config->name : "";
    if (backend.empty()) throw Error("--device needs --backend NAME or --config ootci.yaml");
    std::string out = !a.out.empty() ? a.out : config ? config->workspace : ".";
    std::filesystem::create_directories(out);
    DevicePage page = gather_device_page(*EvidenceStore::open(db), backend);
    if (config) add_bucket_changes(page, bucket_changes_path(*config));
    write_file_atomically(out + "/device.html", render_device_page(page));
    std::cout << out << "/device.html\n";
    return;
  }
  std::string run_dir = config ? run_folder(*config, a.run) : "";
  ReportPage page = gather_report_page(*EvidenceStore::open(db), a.run, run_dir);
  if (config && std::filesystem::exists(run_dir + "/plan.json")) {
    page.reproduce_env = plan_environment(*config, run_dir + "/plan.json", ootci_python_dir(),
                                          process_env("PYTHONPATH"));
    page.reproduce_dir = run_dir;
    page.python = python_command(*config, ootci_python_dir());
  }
  std::string out = !a.out.empty() ? a.out : !run_dir.empty() ? run_dir : ".";
  std::filesystem::create_directories(out);
  write_file_atomically(out + "/report.html", render_report_page(page));
  std::cout << out << "/report.html\n";
}

void report(const ReportArgs& a) {
  // Required unless a subcommand (html) ran instead; CLI11 would require them for that too.
  if (a.status.empty()) throw CLI::RequiredError("--status");
  if (a.payload.empty()) throw CLI::RequiredError("--payload");
  JobStatus status = parse_callback_status(a.status);
  // Retry warnings go to stderr: stdout is the one result line (or the body, with --dry-run).
  spdlog::set_default_logger(spdlog::stderr_color_mt("report"));
  std::optional<BackendConfig> config;
  if (!a.config.empty()) config = load_backend_or_exit(a.config);
  ReportSettings settings = settings_of(a, config);
  nlohmann::json client_payload = read_client_payload(a.payload);
  WorkflowIdentity identity = identity_of(a, settings);
  std::optional<RunOutcome> outcome = completed_outcome(a, status, config);
  nlohmann::json body = build_callback_body(client_payload, status, identity, outcome,
                                            settings.artifact_url, settings.relay);
  if (a.dry_run) {
    std::cout << body.dump(2) << "\n";
    return;
  }
  if (settings.callback_url.empty())
    throw Error("no callback URL: give --callback-url or report.callback_url in ootci.yaml");
  std::string token = fetch_oidc_token(settings, process_env);
  PostOutcome sent = post_callback(settings, token, body);
  std::string answer = sent.status ? fmt::format("HTTP {} {}", sent.status, one_line(sent.body))
                                   : "no response: " + sent.error;
  std::cout << fmt::format("report: {} -> {} ({} attempt(s))\n", a.status, answer, sent.attempts);
  if (!sent.ok()) {
    std::cerr << fmt::format("error: the relay at {} did not accept the {} callback: {}\n",
                             settings.callback_url, a.status, answer);
    throw ExitStatus{1};
  }
}

}  // namespace

void add_report_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Send the CRCR callback (in_progress or completed) for a dispatch to the relay");
  static ReportArgs a;
  cmd->add_option("--status", a.status, "in_progress or completed (required)")
      ->check(CLI::IsMember({"in_progress", "completed"}));
  cmd->add_option(
      "--payload", a.payload,
      "the client_payload JSON, or an object holding it (e.g. $GITHUB_EVENT_PATH) (required)");
  cmd->add_option("--config", a.config, "ootci.yaml: report: settings and the workspace");
  cmd->add_option("--run", a.run, "completed: the run whose verdict and tests to report");
  cmd->add_option("--evidence", a.evidence, "evidence.db (default: <workspace>/evidence.db)");
  cmd->add_option("--conclusion", a.conclusion,
                  "completed: success, failure, cancelled, ... (overrides the run's)");
  cmd->add_option("--triage", a.triage,
                  "triage_verdict JSON (default: <workspace>/runs/<RUN>/triage_verdict.json)");
  cmd->add_option("--callback-url", a.callback_url, "the relay's <url>/github/callback");
  cmd->add_option("--token-file", a.token_file, "a file holding the OIDC token to send");
  cmd->add_option("--audience", a.audience, "OIDC audience (default: pytorch-cross-repo-ci-relay)");
  cmd->add_option("--relay", a.relay,
                  "ootci: retry transient failures (idempotent relay); crcr: one attempt")
      ->check(CLI::IsMember({"ootci", "crcr"}));
  cmd->add_option("--max-attempts", a.max_attempts, "attempts with --relay ootci (default: 5)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--workflow-name", a.workflow_name, "workflow.name (default: GITHUB_WORKFLOW)");
  cmd->add_option("--workflow-url", a.workflow_url, "workflow.url (default: the Actions run)");
  cmd->add_option("--run-id", a.run_id, "workflow.run_id, an integer (default: GITHUB_RUN_ID)");
  cmd->add_option("--run-attempt", a.run_attempt,
                  "workflow.run_attempt (default: GITHUB_RUN_ATTEMPT, else 1)");
  cmd->add_option("--job-name", a.job_name, "workflow.job_name (default: GITHUB_JOB)");
  cmd->add_option("--check-run-id", a.check_run_id,
                  "workflow.check_run_id (default: OOTCI_CHECK_RUN_ID, else <run-id>-<attempt>)");
  cmd->add_option("--started-at", a.started_at,
                  "workflow.started_at (default: now on in_progress)");
  cmd->add_option("--completed-at", a.completed_at,
                  "workflow.completed_at (default: now on completed)");
  cmd->add_option("--artifact-url", a.artifact_url, "workflow.artifact_url");
  cmd->add_flag("--dry-run", a.dry_run, "print the body and send nothing");
  static HtmlArgs h;
  auto* html = cmd->add_subcommand(
      "html", "Write a run's self-contained HTML report (verdict, op x dtype map, trends, ...)");
  auto* run_option = html->add_option("--run", h.run, "the run");
  auto* device_option =
      html->add_flag("--device", h.device,
                     "the device's page instead: the latest run of every file (device.html)");
  run_option->excludes(device_option);
  html->add_option("--backend", h.backend, "--device: the backend (default: the config's name)");
  html->add_option("--config", h.config, "ootci.yaml: the workspace, and how to reproduce");
  html->add_option("--evidence", h.evidence, "evidence.db (default: <workspace>/evidence.db)");
  html->add_option("--out", h.out, "folder for report.html (default: the run's folder)");
  html->callback([] {
    if (h.run.empty() && !h.device) throw CLI::RequiredError("--run or --device");
    report_html(h);
  });
  cmd->callback([html] {
    if (!html->parsed()) report(a);
  });
}

}  // namespace ootci
