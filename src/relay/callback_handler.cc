#include "relay/callback_handler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/time.h"
#include "net/crypto.h"
#include "relay/callback_body.h"
#include "relay/check_runs.h"
#include "relay/demotion.h"
#include "relay/hud_forward.h"
#include "relay/state_machine.h"

namespace ootci {
namespace {

// CRCR strips an optional "Bearer " and takes the rest as the JWT, so a bare token works too.
std::string bearer_token(const std::string& header) {
  if (header.size() >= 7 && strncasecmp(header.c_str(), "Bearer ", 7) == 0) return header.substr(7);
  return header;
}

// Rows stored before the relay hashed outcomes hold hashes of the body bytes. Read them as
// outcomes, so a retry of a step applied before an upgrade is still a duplicate.
void read_stored_hashes_as_outcomes(JobRecord& j, const std::string& incoming) {
  if (j.status == JobStatus::kCompleted && j.completed_hash != incoming &&
      j.completed_hash == sha256_hex(j.last_body))
    j.completed_hash = outcome_hash_of(j.last_body);
  // An in_progress step's outcome is its status alone: every applied one hashes the same.
  static const std::string in_progress = outcome_hash_of(
      R"({"delivery_id":"-","workflow":{"status":"in_progress","name":"-","run_id":"1"}})");
  if (!j.in_progress_hash.empty()) j.in_progress_hash = in_progress;
}

}  // namespace

void CallbackHandler::count(const char* result) {
  d_.metrics.inc("ootci_callbacks_total", fmt::format("result=\"{}\"", result));
}

// Stage 1: OIDC proves which repository is calling. Its name, or the refusal.
std::variant<std::string, Reply> CallbackHandler::caller_repo(const std::string& authorization) {
  std::string token = bearer_token(authorization);
  if (token.empty()) {
    count("unauthenticated");
    return detail_reply(401, "missing bearer token");
  }
  auto verified = d_.oidc.verify(token, now_s());
  if (auto* why = std::get_if<std::string>(&verified)) {
    count("unauthenticated");
    return detail_reply(401, "invalid token: " + *why);
  }
  const VerifiedToken& vt = std::get<VerifiedToken>(verified);
  std::string repo;
  if (vt.issuer->provider != "github") {
    auto id = d_.ci_providers.identity(vt.issuer->provider, vt.claims);
    if (!id.error.empty()) {
      count("forbidden");
      return detail_reply(403, id.error);
    }
    repo = id.repo;
  } else {
    repo = vt.claims.value("repository", "");
    if (repo.empty()) {
      count("unauthenticated");
      return detail_reply(401, "token has no repository claim");
    }
  }
  return repo;
}

// Beyond CRCR: the dispatch's signed token proves this callback answers that dispatch. The commit
// it was issued for (none without a token), or the refusal.
std::variant<std::optional<std::string>, Reply> CallbackHandler::check_callback_token(
    const CallbackBody& body, const std::string& repo) {
  if (!body.callback_token.empty()) {
    auto claims = d_.tokens.verify(body.callback_token, now_s());
    if (!claims) {
      count("forbidden");
      return detail_reply(403, "callback_token is invalid or expired");
    }
    if (claims->delivery_id != body.delivery_id || claims->repo != repo) {
      count("forbidden");
      return detail_reply(403, "callback_token was issued for another delivery or repository");
    }
    return claims->head_sha;
  } else if (d_.config.callback.require_callback_token && !body.is_self_report()) {
    count("forbidden");
    return detail_reply(403, "callback_token is required");
  }
  return std::nullopt;
}

Reply CallbackHandler::handle(const CallbackRequest& req) {
  if (static_cast<int64_t>(req.body.size()) > d_.config.callback.max_body_bytes) {
    count("too_large");
    return detail_reply(
        413, fmt::format("body larger than {} bytes", d_.config.callback.max_body_bytes));
  }
  auto caller = caller_repo(req.authorization);
  if (auto* refused = std::get_if<Reply>(&caller)) return std::move(*refused);
  const std::string& repo = std::get<std::string>(caller);
  // Stage 2: only L2+ repos report; others are silently accepted, as CRCR does.
  auto allow = d_.allowlist.get();
  const AllowlistEntry* entry = allow->find(repo);
  if (!entry || entry->level < Level::kL2) {
    count("ignored");
    return json_reply(200, {{"ok", true}, {"status", "ignored"}});
  }
  // Stage 3: per-repo rate limit over CRCR's 60 s window, with Retry-After so clients can back
  // off correctly. Unlike CRCR, rejected requests do not count.
  if (int64_t wait =
          d_.store.shared.rate_limit(repo, now_ms(), d_.config.callback.rate_limit_per_min, 60)) {
    count("rate_limited");
    Reply r = detail_reply(429, "rate limit exceeded for " + repo);
    r.headers.push_back({"Retry-After", std::to_string(wait)});
    return r;
  }
  auto parsed = parse_callback_body(req.body);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    count("invalid");
    return detail_reply(400, *why);
  }
  CallbackBody& body = std::get<CallbackBody>(parsed);
  // Participation: a dispatched event's callbacks need a dispatch record, which a repo that does
  // not take part never gets; a self-report it does not take part in is accepted and ignored,
  // as a repo below L2 is.
  if (body.is_self_report() && !entry->takes_part_in(body.event_type)) {
    count("ignored");
    return json_reply(200, {{"ok", true},
                            {"status", "ignored"},
                            {"reason", fmt::format("{} does not take part in {} (allowlist events)",
                                                   repo, body.event_type)}});
  }
  auto token = check_callback_token(body, repo);
  if (auto* refused = std::get_if<Reply>(&token)) return std::move(*refused);
  const std::optional<std::string>& token_sha = std::get<std::optional<std::string>>(token);
  if (d_.config.callback.dry_run)
    return json_reply(200, {{"ok", true}, {"status", to_string(body.status)}, {"dry_run", true}});
  if (!d_.config.hud_forward.url.empty() && (body.job_name.empty() || body.check_run_id.empty())) {
    count("invalid");  // the HUD keys rows by them and would reject the forward
    return detail_reply(400, "workflow.job_name and workflow.check_run_id are required");
  }
  return apply(repo, *entry, body, token_sha);
}

Reply CallbackHandler::apply(const std::string& repo, const AllowlistEntry& entry,
                             CallbackBody& body, const std::optional<std::string>& token_sha) {
  int64_t dispatched_ms = -1;
  std::optional<DeliveryRecord> delivery;
  if (body.is_self_report()) {
    if (body.status != JobStatus::kCompleted)
      return detail_reply(400, fmt::format("{} callbacks must be completed", body.event_type));
    if (d_.config.nightly.validate_sha &&
        d_.sha_validator.check(body.head_sha, now_s()) == ShaValidator::Result::kUnknown)
      return detail_reply(400, "unknown upstream SHA " + body.head_sha);
  } else {
    auto dispatch = d_.store.outbox.dispatch_record(body.delivery_id, repo);
    if (!dispatch) return detail_reply(400, "callback rejected: no matching dispatch record");
    dispatched_ms = dispatch->delivered_ms > 0 ? dispatch->delivered_ms : dispatch->created_ms;
    // The commit, PR and labels are what upstream sent us, never what the callback echoes: a
    // downstream must not be able to put check runs on another PR.
    delivery = d_.store.outbox.get_delivery(body.delivery_id, false);
    if (!delivery) return detail_reply(400, "callback rejected: no matching dispatch record");
    if (token_sha && *token_sha != delivery->head_sha)
      return detail_reply(403, "callback_token was issued for another commit");
    body.head_sha = delivery->head_sha;
    body.pr_number = delivery->pr_number;
  }
  std::string key = body.state_key(repo);
  // Compare-and-set on the job's status; a concurrent writer makes us decide again.
  for (int round = 0; round < 3; ++round) {
    std::optional<JobRecord> current = d_.store.jobs.get_job(key);
    std::optional<JobRecord> seen = current;
    if (seen) read_stored_hashes_as_outcomes(*seen, body.outcome_hash);
    TransitionDecision dec =
        decide_transition(seen, body.status, body.outcome_hash, body.is_self_report());
    if (dec.transition == Transition::kDuplicate) {
      d_.metrics.inc("ootci_callbacks_total", "result=\"duplicate\"");
      // The stored step stands: a re-sent one's new timestamps are not written over it.
      return json_reply(200,
                        {{"ok", true}, {"status", to_string(body.status)}, {"duplicate", true}});
    }
    if (dec.transition == Transition::kConflict || dec.transition == Transition::kInvalid) {
      d_.metrics.inc("ootci_callbacks_total", "result=\"rejected\"");
      return detail_reply(transition_http_status(dec.transition), dec.reason);
    }
    int64_t now = now_ms();
    JobRecord j = current.value_or(JobRecord{});
    if (!current) {
      j.key = key;
      j.delivery_id = body.delivery_id;
      j.repo = repo;
      j.run_id = body.run_id;
      j.run_attempt = body.run_attempt;
      j.job_name = body.job_name;
      j.workflow_name = body.workflow_name;
      j.event_type = body.event_type;
      j.head_sha = body.head_sha;
      j.pr_number = body.pr_number;
      j.dispatched_ms = dispatched_ms;
      j.created_ms = now;
    }
    j.level = to_string(entry.level);
    if (!body.workflow_url.empty()) j.workflow_url = body.workflow_url;
    if (!body.check_run_id.empty()) j.check_run_id = body.check_run_id;
    if (!body.artifact_url.empty()) j.artifact_url = body.artifact_url;
    j.status = body.status;
    j.last_body = body.raw;  // verbatim, and no second serialization
    if (body.status == JobStatus::kInProgress) {
      j.in_progress_ms = now;
      j.in_progress_hash = body.outcome_hash;
      // A re-run's queue time would be measured from the original dispatch: null, as RFC-0054.
      j.queue_time_ms = j.run_attempt == 1 && dispatched_ms >= 0 ? now - dispatched_ms : -1;
    } else {
      j.completed_ms = now;
      j.completed_hash = body.outcome_hash;
      j.conclusion = body.conclusion;
      j.execution_time_ms = j.in_progress_ms >= 0 ? now - j.in_progress_ms : -1;
      j.tests_passed = body.passed;
      j.tests_failed = body.failed;
      j.tests_skipped = body.skipped;
      j.tests_total = body.total;
      j.failed_tests_json = body.failed_tests.is_null() ? "" : body.failed_tests.dump();
      j.triage_json = body.triage.is_null() ? "" : body.triage.dump();
      j.verdict_category = body.triage.is_null() ? "" : body.triage.value("category", "");
      j.verdict_confidence = body.triage.is_null() ? "" : body.triage.value("confidence", "");
    }
    std::vector<TaskItem> tasks;
    if (!body.is_self_report() && entry.level >= Level::kL3 && body.pr_number > 0 &&
        !j.head_sha.empty()) {
      bool wanted = j.check_run_created || d_.store.outbox.check_run_wanted(j.head_sha, repo);
      // Labels only matter for L3 without the flag; parse the stored webhook only then.
      nlohmann::json payload = nlohmann::json::object();
      if (!wanted && entry.level == Level::kL3) {
        auto full = d_.store.outbox.get_delivery(body.delivery_id);
        if (full) payload = nlohmann::json::parse(full->body, nullptr, false);
      }
      // A pending demotion holds back the check runs of jobs that started after it began.
      if (wants_check_run(entry, payload.is_object() ? payload : nlohmann::json::object(),
                          wanted) &&
          !(entry.level == Level::kL3 &&
            check_runs_suppressed(
                entry.level, d_.store.levels.demotion(repo),
                j.in_progress_ms >= 0 ? std::optional(j.in_progress_ms) : std::nullopt))) {
        j.check_run_created = true;
        tasks.push_back(check_run_task(j, d_.config.upstream_repo, now));
      }
    }
    if (!d_.config.hud_forward.url.empty()) tasks.push_back(hud_forward_task(j, body.json, now));
    bool ok = current
                  ? d_.store.jobs.update_job(j, current->status, tasks, current->check_run_created)
                  : d_.store.jobs.insert_job(j, tasks);
    if (!ok) continue;
    if (!tasks.empty()) d_.tasks.wake();
    d_.metrics.inc("ootci_callbacks_total", fmt::format("result=\"{}\"", to_string(body.status)));
    nlohmann::json reply = {{"ok", true}, {"status", to_string(body.status)}};
    for (const std::string& note : body.notes) {
      if (note.rfind("triage_verdict dropped: ", 0) == 0)
        reply["triage_verdict"] = note.substr(15);
      else
        reply["warnings"].push_back(note);
    }
    return json_reply(200, reply);
  }
  return detail_reply(503, "concurrent update of this job; retry");
}

}  // namespace ootci
