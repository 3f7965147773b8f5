// POST /github/callback end to end: the real relay binary, the GitHub stand-in, a local OIDC
// issuer, on SQLite and PostgreSQL.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "base/text.h"
#include "base/time.h"
#include "net/crypto.h"
#include "net/jwt.h"
#include "relay/allowlist_edit.h"
#include "relay_store/store.h"
#include "testing/ootci_cli.h"
#include "testing/relay_fixture.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

class CallbackIntegration : public RelayFixture {
 protected:
  // Sends a signed pull_request webhook whose head SHA is `sha` and returns the client_payload
  // that reached `repo`.
  nlohmann::json dispatch_pr(const std::string& delivery, const std::string& repo,
                             const std::string& sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
                             const std::vector<std::string>& labels = {}) {
    auto body = nlohmann::json::parse(fixture("pull_request.opened.json"));
    body["pull_request"]["head"]["sha"] = sha;
    for (const auto& l : labels) body["pull_request"]["labels"].push_back({{"name", l}});
    size_t before = standin_->dispatches().size();
    EXPECT_EQ(send("pull_request", delivery, body.dump()).status, 200);
    EXPECT_TRUE(standin_->wait_for_dispatches(before + 4, 15000)) << relay_->log();
    for (const auto& d : standin_->dispatches())
      if (d.repo == repo && d.client_payload["delivery_id"] == delivery) return d.client_payload;
    ADD_FAILURE() << "no dispatch for " << repo;
    return {};
  }

  // Exactly the body CRCR's cross-repo-ci-relay-callback action builds (reference §5.2).
  static nlohmann::json action_body(const nlohmann::json& cp, const std::string& status,
                                    const std::string& repo, int64_t run_id = 111,
                                    const std::string& job = "test",
                                    const std::string& conclusion = "success") {
    bool done = status == "completed";
    nlohmann::json w = {
        {"schema_version", "1"},
        {"status", status},
        {"conclusion", done ? nlohmann::json(conclusion) : nlohmann::json(nullptr)},
        {"name", "CI"},
        {"url", fmt::format("https://github.com/{}/actions/runs/{}", repo, run_id)},
        {"run_id", std::to_string(run_id)},
        {"run_attempt", "1"},
        {"job_name", job},
        {"check_run_id", std::to_string(run_id * 10)},
        {"started_at", done ? nlohmann::json(nullptr) : nlohmann::json("2026-11-29T10:00:00Z")},
        {"completed_at", done ? nlohmann::json("2026-11-29T10:20:00Z") : nlohmann::json(nullptr)},
        {"test_results", done ? nlohmann::json({{"passed", 10}, {"failed", 1}, {"skipped", 2}})
                              : nlohmann::json(nullptr)},
        {"artifact_url", nullptr}};
    nlohmann::json b = {{"event_type", cp["event_type"]},
                        {"delivery_id", cp["delivery_id"]},
                        {"payload", cp["payload"]},
                        {"workflow", w}};
    return b;
  }

  std::string token(const std::string& repo) { return oidc_->mint(oidc_->claims_for(repo)); }

  std::string key(const nlohmann::json& cp, const std::string& repo, int64_t run_id = 111,
                  const std::string& job = "test") {
    return fmt::format("{}:{}:{}:1:{}", cp["delivery_id"].get<std::string>(), repo, run_id, job);
  }

  nlohmann::json reply(const HttpResult& r) {
    return nlohmann::json::parse(r.body, nullptr, false);
  }
  std::vector<RecordedCall> check_runs() {
    return standin_->calls("/repos/Codertocat/Hello-World/check-runs");
  }
};

TEST_P(CallbackIntegration, CrcrActionBodyInProgressThenCompletedIsStoredFieldByField) {
  start_relay();
  auto cp = dispatch_pr("d-action", "acme/two");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  HttpResult r1 = callback(action_body(cp, "in_progress", "acme/two"), token("acme/two"));
  ASSERT_EQ(r1.status, 200) << r1.body;
  EXPECT_EQ(reply(r1), (nlohmann::json{{"ok", true}, {"status", "in_progress"}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  HttpResult r2 = callback(action_body(cp, "completed", "acme/two"), token("acme/two"));
  ASSERT_EQ(r2.status, 200) << r2.body;
  EXPECT_EQ(reply(r2)["status"], "completed");

  auto store = open_store(store_uri_);
  auto job = store->jobs.get_job(key(cp, "acme/two"));
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, JobStatus::kCompleted);
  EXPECT_EQ(job->conclusion.text(), "success");
  EXPECT_EQ(job->repo, "acme/two");
  EXPECT_EQ(job->run_id, "111");
  EXPECT_EQ(job->run_attempt, 1);
  EXPECT_EQ(job->job_name, "test");
  EXPECT_EQ(job->workflow_name, "CI");
  EXPECT_EQ(job->event_type, "pull_request");
  EXPECT_EQ(job->pr_number, 2);
  EXPECT_EQ(job->head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  EXPECT_EQ(job->level, "L2");
  EXPECT_EQ(job->check_run_id, "1110");
  EXPECT_EQ(job->workflow_url, "https://github.com/acme/two/actions/runs/111");
  EXPECT_GE(job->queue_time_ms, 50);
  EXPECT_GE(job->execution_time_ms, 50);
  EXPECT_EQ(job->tests_passed, 10);
  EXPECT_EQ(job->tests_failed, 1);
  EXPECT_EQ(job->tests_skipped, 2);
  EXPECT_EQ(job->tests_total, 13);
  EXPECT_FALSE(job->check_run_created);  // L2: HUD only
  EXPECT_TRUE(check_runs().empty());
}

TEST_P(CallbackIntegration, AttackTableGetsTheRightStatusAndWritesNothing) {
  start_relay("callback:\n  rate_limit_per_min: 20\n");
  auto cp = dispatch_pr("d-attack", "acme/two");
  auto other = dispatch_pr("d-other", "acme/two");
  nlohmann::json good = action_body(cp, "in_progress", "acme/two");
  good["callback_token"] = cp["callback_token"];
  auto claims = oidc_->claims_for("acme/two");
  auto with = [&](std::function<void(nlohmann::json&)> f) {
    auto c = claims;
    f(c);
    return oidc_->mint(c);
  };
  std::string header_none = base64url_encode(R"({"alg":"none","typ":"JWT"})");
  std::string alg_none = header_none + "." + base64url_encode(claims.dump()) + ".";
  std::string hs256_pubkey = jwt_sign_hs256(claims, oidc_->public_key_pem());
  OidcIssuerStandin stranger;  // a real issuer the relay does not trust
  stranger.start();
  auto stranger_claims = stranger.claims_for("acme/two");
  nlohmann::json replayed = good;
  replayed["callback_token"] = other["callback_token"];  // token of another delivery
  nlohmann::json missing_workflow = good;
  missing_workflow.erase("workflow");
  nlohmann::json missing_name = good;
  missing_name["workflow"].erase("name");
  nlohmann::json missing_delivery = good;
  missing_delivery.erase("delivery_id");
  nlohmann::json bad_run_id = good;
  bad_run_id["workflow"]["run_id"] = "1:evil";  // would forge a segment of the state key

  struct Case {
    std::string name;
    std::string body;
    std::string bearer;
    int status;
  };
  std::vector<Case> cases = {
      {"no token", good.dump(), "", 401},
      {"wrong audience", good.dump(), with([](auto& c) { c["aud"] = "someone-else"; }), 401},
      {"wrong issuer", good.dump(), stranger.mint(stranger_claims), 401},
      {"forged iss", good.dump(), with([&](auto& c) { c["iss"] = stranger.issuer(); }), 401},
      {"expired", good.dump(), with([](auto& c) { c["exp"] = now_s() - 3600; }), 401},
      {"not yet valid", good.dump(), with([](auto& c) { c["nbf"] = now_s() + 3600; }), 401},
      {"alg none", good.dump(), alg_none, 401},
      {"HS256 signed with the public key", good.dump(), hs256_pubkey, 401},
      {"token for another repo", good.dump(), token("acme/three"), 403},
      {"replayed callback token", replayed.dump(), token("acme/two"), 403},
      {"3 MB body", std::string(3 * 1024 * 1024, ' ') + good.dump(), token("acme/two"), 413},
      {"malformed JSON", "{\"delivery_id\": ", token("acme/two"), 400},
      {"missing workflow", missing_workflow.dump(), token("acme/two"), 400},
      {"missing workflow.name", missing_name.dump(), token("acme/two"), 400},
      {"missing delivery_id", missing_delivery.dump(), token("acme/two"), 400},
      {"run_id with a colon", bad_run_id.dump(), token("acme/two"), 400},
  };
  for (const auto& c : cases) {
    HttpRequest req;
    req.method = "POST";
    req.url = relay_->url() + "/github/callback";
    req.body = c.body;
    if (!c.bearer.empty()) req.headers = {{"Authorization", "Bearer " + c.bearer}};
    HttpResult r = http_send(req);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.body;
    EXPECT_TRUE(reply(r).contains("detail")) << c.name << ": " << r.body;
  }
  // A burst over the limit: 429 with Retry-After (rejected calls count too, as in CRCR).
  HttpResult limited;
  for (int i = 0; i < 25 && limited.status != 429; ++i)
    limited = callback(missing_name, token("acme/two"));
  EXPECT_EQ(limited.status, 429);
  EXPECT_GE(std::stoi(limited.header("Retry-After")), 1);
  EXPECT_EQ(reply(limited)["detail"], "rate limit exceeded for acme/two");

  auto store = open_store(store_uri_);
  EXPECT_FALSE(store->jobs.get_job(key(cp, "acme/two")));
  EXPECT_FALSE(store->jobs.get_job(key(cp, "acme/three")));
  EXPECT_EQ(store->tasks.task_counts().pending + store->tasks.task_counts().done, 0);
  // acme/two's callback token does not serve acme/four either (another repo, its own limit).
  HttpResult other_repo = callback(good, token("acme/four"));
  EXPECT_EQ(other_repo.status, 403) << other_repo.body;
}

TEST_P(CallbackIntegration, ExactRepeatsAreDuplicatesAndNothingChanges) {
  start_relay();
  auto cp = dispatch_pr("d-retry", "acme/two");
  auto ip = action_body(cp, "in_progress", "acme/two");
  ip["callback_token"] = cp["callback_token"];
  auto done = action_body(cp, "completed", "acme/two");
  done["callback_token"] = cp["callback_token"];
  ASSERT_EQ(callback(ip, token("acme/two")).status, 200);
  HttpResult again = callback(ip, token("acme/two"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(reply(again)["duplicate"], true);
  ASSERT_EQ(callback(done, token("acme/two")).status, 200);
  auto store = open_store(store_uri_);
  auto first = store->jobs.get_job(key(cp, "acme/two"));
  // A dropped response makes the client retry completed, and even the earlier in_progress.
  HttpResult retry_done = callback(done, token("acme/two"));
  EXPECT_EQ(retry_done.status, 200);
  EXPECT_EQ(reply(retry_done)["duplicate"], true);
  HttpResult late_ip = callback(ip, token("acme/two"));
  EXPECT_EQ(late_ip.status, 200);
  EXPECT_EQ(reply(late_ip)["duplicate"], true);
  auto after = store->jobs.get_job(key(cp, "acme/two"));
  EXPECT_EQ(after->completed_ms, first->completed_ms);
  EXPECT_EQ(after->status, JobStatus::kCompleted);
}

TEST_P(CallbackIntegration, ConflictsAndInvalidTransitions) {
  start_relay();
  auto cp = dispatch_pr("d-conflict", "acme/two");
  auto ip = action_body(cp, "in_progress", "acme/two");
  ASSERT_EQ(callback(ip, token("acme/two")).status, 200);
  ASSERT_EQ(callback(action_body(cp, "completed", "acme/two"), token("acme/two")).status, 200);
  // A completed that contradicts the stored one: another conclusion, or other counts.
  auto failure = action_body(cp, "completed", "acme/two", 111, "test", "failure");
  HttpResult conflict = callback(failure, token("acme/two"));
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(reply(conflict)["detail"],
            "conflicting repeat: completed was already applied with a different body");
  auto other_counts = action_body(cp, "completed", "acme/two");
  other_counts["workflow"]["test_results"]["failed"] = 2;
  EXPECT_EQ(callback(other_counts, token("acme/two")).status, 409);
  // Skipping in_progress.
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two", 222), token("acme/two")).status, 400);
  // No dispatch record.
  auto unknown = action_body(cp, "in_progress", "acme/two");
  unknown["delivery_id"] = "never-dispatched";
  HttpResult r = callback(unknown, token("acme/two"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(reply(r)["detail"], "callback rejected: no matching dispatch record");
  // Unknown status.
  auto weird = ip;
  weird["workflow"]["status"] = "queued";
  EXPECT_EQ(callback(weird, token("acme/two")).status, 400);
  // A nightly completed alone has no in_progress to go back to.
  auto store = open_store(store_uri_);
  EXPECT_EQ(store->jobs.get_job(key(cp, "acme/two"))->conclusion.text(), "success");
  EXPECT_EQ(store->jobs.get_job(key(cp, "acme/two"))->tests_failed, 1);
}

// CRCR's action step re-run after a dropped response: the same step with fresh timestamps
// (test-infra#8119, #8145). A run id may be a Buildkite build UUID, the bearer prefix may be
// missing, and the verdict may sit where upstream reads it.
TEST_P(CallbackIntegration, TheRealClientsRetriesUuidRunIdsBareTokensAndWorkflowVerdicts) {
  start_relay();
  auto cp = dispatch_pr("d-resend", "acme/two");
  auto ip = action_body(cp, "in_progress", "acme/two");
  ASSERT_EQ(callback(ip, token("acme/two")).status, 200);
  auto store = open_store(store_uri_);
  int64_t started = store->jobs.get_job(key(cp, "acme/two"))->in_progress_ms;
  auto ip_again = ip;
  ip_again["workflow"]["started_at"] = "2026-11-29T11:00:00Z";
  HttpResult r = callback(ip_again, token("acme/two"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(reply(r)["duplicate"], true);
  auto done = action_body(cp, "completed", "acme/two", 111, "test", "failure");
  nlohmann::json verdict = {{"schema_version", 1},
                            {"category", "backend"},
                            {"confidence", "high"},
                            {"summary", std::string(1200, 's')},
                            {"analyzer", {{"name", "ootci"}, {"version", "0.14.0"}}},
                            {"evidence", nlohmann::json::array()}};
  for (int i = 0; i < 12; ++i) verdict["evidence"].push_back(fmt::format("probe {}", i));
  done["workflow"]["triage_verdict"] = verdict;
  HttpResult applied = callback(done, token("acme/two"));
  ASSERT_EQ(applied.status, 200) << applied.body;
  EXPECT_EQ(reply(applied)["warnings"],
            (nlohmann::json{"triage_verdict.summary cut to 1000 characters",
                            "triage_verdict.evidence cut to 10 of 12 entries"}));
  auto first = store->jobs.get_job(key(cp, "acme/two"));
  EXPECT_EQ(first->in_progress_ms, started);
  auto resent = done;
  resent["workflow"]["completed_at"] = "2026-11-29T10:45:00Z";
  HttpResult dup = callback(resent, token("acme/two"));
  EXPECT_EQ(dup.status, 200) << dup.body;
  EXPECT_EQ(reply(dup)["duplicate"], true);
  auto after = store->jobs.get_job(key(cp, "acme/two"));
  EXPECT_EQ(after->completed_ms, first->completed_ms);
  EXPECT_EQ(after->last_body, first->last_body);  // the stored step stands
  // A late in_progress re-send after completed is a duplicate too.
  EXPECT_EQ(reply(callback(ip_again, token("acme/two")))["duplicate"], true);
  // A row an older relay stored holds hashes of the body bytes: a re-send is still a duplicate.
  JobRecord legacy = *after;
  legacy.completed_hash = sha256_hex(legacy.last_body);
  legacy.in_progress_hash = sha256_hex(ip.dump());
  ASSERT_TRUE(store->jobs.update_job(legacy, JobStatus::kCompleted, {}, legacy.check_run_created));
  EXPECT_EQ(reply(callback(resent, token("acme/two")))["duplicate"], true);
  EXPECT_EQ(reply(callback(ip_again, token("acme/two")))["duplicate"], true);
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), token("acme/two")).status, 409);

  // The verdict is stored, cut, and the HUD's job page shows it.
  auto stored = nlohmann::json::parse(after->triage_json);
  EXPECT_EQ(stored["summary"].get<std::string>().size(), 1000u);
  EXPECT_EQ(stored["evidence"].size(), 10u);
  HttpResult page = get("/crcr/job?key=" + url_encode(key(cp, "acme/two")));
  EXPECT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("analyzer: ootci 0.14.0"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("probe 9"), std::string::npos);
  EXPECT_EQ(page.body.find("probe 10"), std::string::npos);

  // A Buildkite-style UUID run id, in_progress then completed, with a bare token (no "Bearer ").
  const std::string uuid = "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11";
  auto bare = [&](const nlohmann::json& body) {
    HttpRequest req;
    req.method = "POST";
    req.url = relay_->url() + "/github/callback";
    req.body = body.dump();
    req.headers = {{"Authorization", token("acme/two")}};
    return http_send(req);
  };
  auto uuid_ip = action_body(cp, "in_progress", "acme/two", 1, "bk");
  uuid_ip["workflow"]["run_id"] = uuid;
  auto uuid_done = action_body(cp, "completed", "acme/two", 1, "bk");
  uuid_done["workflow"]["run_id"] = uuid;
  HttpResult u1 = bare(uuid_ip);
  EXPECT_EQ(u1.status, 200) << u1.body;
  HttpResult u2 = bare(uuid_done);
  EXPECT_EQ(u2.status, 200) << u2.body;
  std::string uuid_key = fmt::format("d-resend:acme/two:{}:1:bk", uuid);
  auto bk = store->jobs.get_job(uuid_key);
  ASSERT_TRUE(bk) << relay_->log();
  EXPECT_EQ(bk->run_id, uuid);
  EXPECT_EQ(bk->status, JobStatus::kCompleted);
  EXPECT_EQ(bk->conclusion.text(), "success");
  auto api = nlohmann::json::parse(get("/api/crcr/job?key=" + url_encode(uuid_key)).body);
  EXPECT_EQ(api["run_id"], uuid);
  EXPECT_EQ(nlohmann::json::parse(
                get("/api/crcr/job?key=" + url_encode(key(cp, "acme/two"))).body)["run_id"],
            111);
}

TEST_P(CallbackIntegration, BelowL2IsIgnoredAndRequireCallbackTokenIsEnforced) {
  start_relay("callback:\n  require_callback_token: true\n");
  auto cp = dispatch_pr("d-gate", "acme/one");
  HttpResult l1 = callback(action_body(cp, "in_progress", "acme/one"), token("acme/one"));
  EXPECT_EQ(l1.status, 200);
  EXPECT_EQ(reply(l1), (nlohmann::json{{"ok", true}, {"status", "ignored"}}));
  HttpResult untokened = callback(action_body(cp, "in_progress", "acme/two"), token("acme/two"));
  EXPECT_EQ(untokened.status, 403);
  auto cp2 = dispatch_pr("d-gate2", "acme/two");
  auto body = action_body(cp2, "in_progress", "acme/two");
  body["callback_token"] = cp2["callback_token"];
  EXPECT_EQ(callback(body, token("acme/two")).status, 200);
}

TEST_P(CallbackIntegration, L4GetsCheckRunsAndRerunRequestsReachGitHub) {
  start_relay();
  auto cp = dispatch_pr("d-l4", "acme/four");
  ASSERT_EQ(callback(action_body(cp, "in_progress", "acme/four"), token("acme/four")).status, 200);
  ASSERT_EQ(callback(action_body(cp, "completed", "acme/four", 111, "test", "failure"),
                     token("acme/four"))
                .status,
            200);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 2, 10000))
      << relay_->log();
  auto runs = check_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].body["name"], "crcr/acme/four/CI/test");
  EXPECT_EQ(runs[0].body["status"], "in_progress");
  EXPECT_EQ(runs[0].body["head_sha"], "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  EXPECT_EQ(runs[0].body["external_id"], "111:2");
  EXPECT_EQ(runs[0].body["details_url"], "https://github.com/acme/four/actions/runs/111");
  EXPECT_EQ(runs[0].body["output"]["title"], "In progress");
  EXPECT_EQ(runs[1].body["status"], "completed");
  EXPECT_EQ(runs[1].body["conclusion"], "failure");
  EXPECT_EQ(runs[1].body["output"]["title"], "Failure");
  EXPECT_FALSE(runs[1].body.contains("upstream_repo"));

  // "Re-run" on the check run → rerun-failed-jobs on the downstream run.
  auto cr = nlohmann::json::parse(fixture("check_run.rerequested.json"));
  cr["repository"]["full_name"] = kUpstream;
  cr["check_run"]["name"] = "crcr/acme/four/CI/test";
  cr["check_run"]["external_id"] = "111:2";
  HttpResult rr = send("check_run", "rr-1", cr.dump());
  EXPECT_EQ(reply(rr)["runs"].size(), 1u) << rr.body;
  EXPECT_TRUE(
      standin_->wait_for_calls("/repos/acme/four/actions/runs/111/rerun-failed-jobs", 1, 10000));
  // "Re-run all checks" on the suite → a full /rerun per (repo, run).
  auto cs = nlohmann::json::parse(fixture("check_suite.rerequested.json"));
  cs["check_suite"]["head_sha"] = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
  send("check_suite", "rr-2", cs.dump());
  EXPECT_TRUE(standin_->wait_for_calls("/repos/acme/four/actions/runs/111/rerun", 2, 10000));
  EXPECT_EQ(standin_->calls("/repos/acme/four/actions/runs/111/rerun-failed-jobs").size(), 1u);
  // An L2 repo's check run name is not re-run.
  cr["check_run"]["name"] = "crcr/acme/two/CI/test";
  EXPECT_EQ(reply(send("check_run", "rr-3", cr.dump()))["runs"].size(), 0u);
}

TEST_P(CallbackIntegration, L3LabelScenarios) {
  start_relay();
  const std::string label = "ciflow/crcr/acme-dev";
  auto labeled = [&](const std::string& sha) {
    auto l = nlohmann::json::parse(fixture("pull_request.labeled.json"));
    l["label"]["name"] = label;
    l["pull_request"]["head"]["sha"] = sha;
    return send("pull_request", "label-" + sha, l.dump());
  };
  auto name_of = [](const RecordedCall& c) {
    return c.body["head_sha"].get<std::string>() + " " + c.body["status"].get<std::string>();
  };
  std::string s0(40, '0'), s1(40, '1'), s2(40, '2'), s3(40, '3');

  // No label: L3 gets no check runs.
  auto cp0 = dispatch_pr("d-s0", "acme/three", s0);
  callback(action_body(cp0, "in_progress", "acme/three"), token("acme/three"));
  callback(action_body(cp0, "completed", "acme/three"), token("acme/three"));
  // Scenario 1: label before the callbacks.
  auto cp1 = dispatch_pr("d-s1", "acme/three", s1);
  ASSERT_EQ(reply(labeled(s1))["repos"], nlohmann::json::array({"acme/three"}));
  callback(action_body(cp1, "in_progress", "acme/three"), token("acme/three"));
  callback(action_body(cp1, "completed", "acme/three"), token("acme/three"));
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 2, 10000));
  // Scenario 2: label while running → an in_progress check run at once, completed later.
  auto cp2 = dispatch_pr("d-s2", "acme/three", s2);
  callback(action_body(cp2, "in_progress", "acme/three"), token("acme/three"));
  EXPECT_EQ(reply(labeled(s2))["check_runs_backfilled"], 1);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 3, 10000));
  callback(action_body(cp2, "completed", "acme/three"), token("acme/three"));
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 4, 10000));
  // Scenario 3: label after completion → a completed check run from the stored job.
  auto cp3 = dispatch_pr("d-s3", "acme/three", s3);
  callback(action_body(cp3, "in_progress", "acme/three"), token("acme/three"));
  callback(action_body(cp3, "completed", "acme/three", 111, "test", "failure"),
           token("acme/three"));
  EXPECT_EQ(reply(labeled(s3))["check_runs_backfilled"], 1);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 5, 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  std::vector<std::string> got;
  for (const auto& c : check_runs()) got.push_back(name_of(c));
  std::vector<std::string> want = {s1 + " in_progress", s1 + " completed", s2 + " in_progress",
                                   s2 + " completed", s3 + " completed"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(check_runs().back().body["conclusion"], "failure");
  // The label on an already-labelled commit backfills nothing new.
  EXPECT_EQ(reply(labeled(s3))["check_runs_backfilled"], 0);
}

TEST_P(CallbackIntegration, SweeperTimesOutZombiesAndReportsItsHeartbeat) {
  start_relay("sweeper:\n  interval_s: 1\n  zombie_timeout_s: 2\n");
  auto cp = dispatch_pr("d-zombie", "acme/four");
  ASSERT_EQ(callback(action_body(cp, "in_progress", "acme/four"), token("acme/four")).status, 200);
  auto store = open_store(store_uri_);
  std::optional<JobRecord> job;
  for (int i = 0; i < 100; ++i) {
    job = store->jobs.get_job(key(cp, "acme/four"));
    if (job && job->status == JobStatus::kCompleted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, JobStatus::kCompleted);
  EXPECT_EQ(job->conclusion.text(), "timed_out");
  EXPECT_GE(job->execution_time_ms, 2000);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 2, 10000));
  EXPECT_EQ(check_runs()[1].body["conclusion"], "timed_out");
  auto health = reply(get("/healthz"));
  EXPECT_EQ(health["sweeper_ok"], true);
  EXPECT_LE(health["sweeper_last_run_age_s"].get<int>(), 3);
  EXPECT_NE(get("/metrics").body.find("ootci_sweeper_last_run_timestamp_seconds 1"),
            std::string::npos);
  // The downstream's own completed callback arrives too late: the timed-out result stands.
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/four"), token("acme/four")).status, 409);
}

TEST_P(CallbackIntegration, HudForwardIsDurableAndCarriesTheTrustedEnvelope) {
  standin_->queue_call_faults("/hud/crcr/results", {{503, -1, 0}, {502, -1, 0}});
  start_relay(fmt::format("hud_forward:\n  url: {}/hud\n  key_env: HUD_KEY\n", standin_->url()),
              {{"HUD_KEY", "bot-key"}});
  auto cp = dispatch_pr("d-hud", "acme/two");
  auto ip = action_body(cp, "in_progress", "acme/two");
  ASSERT_EQ(callback(ip, token("acme/two")).status, 200);
  ASSERT_EQ(callback(action_body(cp, "completed", "acme/two"), token("acme/two")).status, 200);
  ASSERT_TRUE(standin_->wait_for_calls("/hud/crcr/results", 2, 15000)) << relay_->log();
  auto calls = standin_->calls("/hud/crcr/results");
  EXPECT_EQ(calls[0].auth, "bot-key");
  EXPECT_EQ(calls[0].body["trusted"]["verified_repo"], "acme/two");
  EXPECT_EQ(calls[0].body["trusted"]["downstream_repo_level"], "L2");
  EXPECT_TRUE(calls[0].body["trusted"]["ci_metrics"]["queue_time"].is_number());
  EXPECT_TRUE(calls[0].body["trusted"]["ci_metrics"]["execution_time"].is_null());
  EXPECT_EQ(calls[0].body["untrusted"]["callback_payload"], ip);
  EXPECT_TRUE(calls[1].body["trusted"]["ci_metrics"]["execution_time"].is_number());
  EXPECT_EQ(calls[1].body["untrusted"]["callback_payload"]["workflow"]["status"], "completed");
}

TEST_P(CallbackIntegration, NightlySelfReportValidatesTheSha) {
  std::string sha(40, 'a');
  standin_->add_commit(kUpstream, sha);
  start_relay();
  nlohmann::json body = {
      {"event_type", "nightly"},
      {"delivery_id", sha},
      {"payload", {{"repository", {{"full_name", kUpstream}}}, {"head_sha", sha}}},
      {"workflow",
       {{"status", "completed"},
        {"conclusion", "success"},
        {"name", "nightly"},
        {"run_id", "77"},
        {"job_name", "all"}}}};
  HttpResult ok = callback(body, token("acme/two"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(reply(callback(body, token("acme/two")))["duplicate"], true);
  auto unknown = body;
  unknown["delivery_id"] = std::string(40, 'b');
  unknown["payload"]["head_sha"] = std::string(40, 'b');
  HttpResult bad = callback(unknown, token("acme/two"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(reply(bad)["detail"], "unknown upstream SHA " + std::string(40, 'b'));
  auto running = body;
  running["workflow"]["status"] = "in_progress";
  EXPECT_EQ(callback(running, token("acme/two")).status, 400);
  auto job = open_store(store_uri_)->jobs.get_job(sha + ":acme/two:77:1:all");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->event_type, "nightly");
  EXPECT_EQ(job->head_sha, sha);
  EXPECT_EQ(job->queue_time_ms, -1);
}

TEST_P(CallbackIntegration, FailedTestsAreCappedAndAnInvalidVerdictIsDroppedWhole) {
  start_relay();
  auto cp = dispatch_pr("d-caps", "acme/two");
  ASSERT_EQ(callback(action_body(cp, "in_progress", "acme/two"), token("acme/two")).status, 200);
  auto done = action_body(cp, "completed", "acme/two");
  for (int i = 0; i < 1200; ++i) {
    bool long_one = i < 3;  // the 2 MB body cap allows 1,200 entries only if most are short
    done["failed_tests_detail"].push_back({{"name", fmt::format("test_{}", i)},
                                           {"message", std::string(long_one ? 3000 : 20, 'm')},
                                           {"stacktrace", std::string(long_one ? 9000 : 20, 's')}});
  }
  done["triage_verdict"] = {
      {"schema_version", 1}, {"category", "blame-the-intern"}, {"confidence", "high"}};
  HttpResult r = callback(done, token("acme/two"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(reply(r)["triage_verdict"],
            "dropped: category must be upstream, backend, infra, flake or unknown");
  EXPECT_EQ(reply(r)["warnings"].size(), 1u);
  auto job = open_store(store_uri_)->jobs.get_job(key(cp, "acme/two"));
  auto failed = nlohmann::json::parse(job->failed_tests_json);
  EXPECT_EQ(failed.size(), 1000u);
  EXPECT_EQ(failed[0]["message"].get<std::string>().size(), 1024u);
  EXPECT_EQ(failed[2]["stacktrace"].get<std::string>().size(), 4096u);
  EXPECT_EQ(failed[999]["name"], "test_999");
  EXPECT_EQ(job->triage_json, "");

  auto cp2 = dispatch_pr("d-verdict", "acme/two");
  callback(action_body(cp2, "in_progress", "acme/two"), token("acme/two"));
  auto good = action_body(cp2, "completed", "acme/two", 111, "test", "failure");
  good["triage_verdict"] = {{"schema_version", 1},
                            {"category", "upstream"},
                            {"confidence", "high"},
                            {"summary", "aten::add int64 broke"},
                            {"suspected_upstream", {{"sha", "abc"}, {"pr", 123}}},
                            {"evidence", {"old backend + new core: FAIL"}},
                            {"analyzer", "ootci"}};
  HttpResult r2 = callback(good, token("acme/two"));
  EXPECT_FALSE(reply(r2).contains("triage_verdict"));
  auto job2 = open_store(store_uri_)->jobs.get_job(key(cp2, "acme/two"));
  EXPECT_EQ(nlohmann::json::parse(job2->triage_json)["category"], "upstream");
}

TEST_P(CallbackIntegration, BuildkiteTokensMapThroughCiProviders) {
  OidcIssuerStandin buildkite;
  buildkite.start();
  write_file(
      dir_ + "/ci_providers.yml",
      "providers:\n  buildkite:\n    repo_map:\n      org-1/pipe-1:\n        repo: acme/two\n"
      "        required_claims:\n          build_branch: [main]\n");
  // Two trusted issuers: Buildkite (mapped through ci_providers) and the GitHub Actions one.
  std::string cfg = config("ci_providers: ci_providers.yml\n");
  cfg.replace(cfg.find("oidc:\n  issuers:\n"), 17,
              fmt::format("oidc:\n  issuers:\n    - issuer: {}\n      jwks_url: {}\n"
                          "      provider: buildkite\n",
                          buildkite.issuer(), buildkite.jwks_url()));
  relay_ = std::make_unique<RelayProcess>(
      dir_, cfg, port_, std::map<std::string, std::string>{{"TEST_WEBHOOK_SECRET", kSecret}});
  relay_->start();
  auto cp = dispatch_pr("d-bk", "acme/two");
  nlohmann::json claims = {{"iss", buildkite.issuer()},  {"aud", "pytorch-cross-repo-ci-relay"},
                           {"organization_id", "org-1"}, {"pipeline_id", "pipe-1"},
                           {"build_branch", "main"},     {"iat", now_s()},
                           {"exp", now_s() + 300}};
  EXPECT_EQ(callback(action_body(cp, "in_progress", "acme/two"), buildkite.mint(claims)).status,
            200);
  claims["build_branch"] = "fork-pr";
  HttpResult fork = callback(action_body(cp, "completed", "acme/two"), buildkite.mint(claims));
  EXPECT_EQ(fork.status, 403);
  EXPECT_EQ(reply(fork)["detail"], "claim build_branch is not allowed for this pipeline");
  claims["pipeline_id"] = "unknown";
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), buildkite.mint(claims)).status, 403);
  // GitHub Actions tokens still work next to it.
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), token("acme/two")).status, 200);
}

// GitLab CI id_tokens and CircleCI OIDC tokens name a project, mapped to the allowlisted repo
// through ci_providers.yml as Buildkite's pipelines are; a token with the wrong claims is refused.
TEST_P(CallbackIntegration, GitLabAndCircleCiTokensMapThroughCiProviders) {
  OidcIssuerStandin gitlab, circleci;
  gitlab.start();
  circleci.start();
  write_file(dir_ + "/ci_providers.yml",
             "providers:\n  gitlab:\n    repo_map:\n      \"4242\":\n        repo: acme/two\n"
             "        required_claims:\n          ref_protected: [\"true\"]\n"
             "  circleci:\n    repo_map:\n      org-7/proj-9: acme/four\n");
  std::string cfg = config("ci_providers: ci_providers.yml\n");
  cfg.replace(
      cfg.find("oidc:\n  issuers:\n"), 17,
      fmt::format("oidc:\n  issuers:\n    - issuer: {}\n      jwks_url: {}\n"
                  "      provider: gitlab\n      audience: crcr-relay\n"
                  "    - issuer: {}\n      jwks_url: {}\n      provider: circleci\n"
                  "      audience: org-7\n",
                  gitlab.issuer(), gitlab.jwks_url(), circleci.issuer(), circleci.jwks_url()));
  relay_ = std::make_unique<RelayProcess>(
      dir_, cfg, port_, std::map<std::string, std::string>{{"TEST_WEBHOOK_SECRET", kSecret}});
  relay_->start();
  nlohmann::json gl = {{"iss", gitlab.issuer()},
                       {"aud", "crcr-relay"},
                       {"sub", "project_path:acme/two:ref_type:branch:ref:main"},
                       {"namespace_path", "acme"},
                       {"project_path", "acme/two"},
                       {"project_id", "4242"},
                       {"pipeline_id", "1001"},
                       {"job_id", "2002"},
                       {"ref", "main"},
                       {"ref_type", "branch"},
                       {"ref_protected", "true"},
                       {"iat", now_s()},
                       {"exp", now_s() + 300}};
  auto cp = dispatch_pr("d-gl", "acme/two");
  HttpResult ok = callback(action_body(cp, "in_progress", "acme/two"), gitlab.mint(gl));
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto unprotected = gl;
  unprotected["ref_protected"] = "false";  // a fork's or a branch's pipeline
  HttpResult refused = callback(action_body(cp, "completed", "acme/two"), gitlab.mint(unprotected));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(reply(refused)["detail"], "claim ref_protected is not allowed for this project");
  auto other_project = gl;
  other_project["project_id"] = "5151";
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), gitlab.mint(other_project)).status,
            403);
  auto wrong_audience = gl;
  wrong_audience["aud"] = "pytorch-cross-repo-ci-relay";
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), gitlab.mint(wrong_audience)).status,
            401);
  EXPECT_EQ(callback(action_body(cp, "completed", "acme/two"), gitlab.mint(gl)).status, 200);

  nlohmann::json cc = {{"iss", circleci.issuer()},
                       {"aud", "org-7"},
                       {"sub", "org/org-7/project/proj-9/user/u-1"},
                       {"oidc.circleci.com/project-id", "proj-9"},
                       {"oidc.circleci.com/vcs-origin", "github.com/acme/four"},
                       {"oidc.circleci.com/vcs-ref", "refs/heads/main"},
                       {"iat", now_s()},
                       {"exp", now_s() + 300}};
  auto cp4 = dispatch_pr("d-cc", "acme/four");
  EXPECT_EQ(callback(action_body(cp4, "in_progress", "acme/four"), circleci.mint(cc)).status, 200);
  auto forged = cc;
  forged["oidc.circleci.com/project-id"] = "proj-1";  // disagrees with sub
  HttpResult bad = callback(action_body(cp4, "completed", "acme/four"), circleci.mint(forged));
  EXPECT_EQ(bad.status, 403);
  EXPECT_EQ(reply(bad)["detail"], "CircleCI project is not registered");
  // A CircleCI token cannot pass as GitLab's, nor the other way round (another issuer's keys).
  auto as_gitlab = cc;
  as_gitlab["iss"] = gitlab.issuer();
  EXPECT_EQ(callback(action_body(cp4, "completed", "acme/four"), circleci.mint(as_gitlab)).status,
            401);
  auto store = open_store(store_uri_);
  EXPECT_EQ(store->jobs.get_job(key(cp, "acme/two"))->status, JobStatus::kCompleted);
  EXPECT_EQ(store->jobs.get_job(key(cp4, "acme/four"))->status, JobStatus::kInProgress);
}

// Participation (test-infra#8856): a nightly-only backend gets no pull_request dispatch, and a
// self-report of an event a backend does not take part in is ignored.
TEST_P(CallbackIntegration, EventsInTheAllowlistDecideWhoIsDispatchedWhat) {
  write_file(dir_ + "/allowlist.yml",
             "L1:\n  - acme/one\nL2:\n  - acme/two: {events: [nightly]}\n"
             "  - acme/five: {events: [pull_request, push]}\n"
             "L3:\n  acme-dev:\n    acme/three: [ann]\nL4:\n  - acme/four: '@bob'\n");
  std::string sha(40, 'c');
  standin_->add_commit(kUpstream, sha);
  start_relay();
  ASSERT_EQ(send("pull_request", "d-part", fixture("pull_request.opened.json")).status, 200);
  auto got = settle(4);
  std::set<std::string> repos;
  for (const auto& d : got) repos.insert(d.repo);
  EXPECT_EQ(repos, (std::set<std::string>{"acme/five", "acme/four", "acme/one", "acme/three"}));
  nlohmann::json nightly = {{"event_type", "nightly"},
                            {"delivery_id", sha},
                            {"pytorch_head_sha", sha},
                            {"payload", {{"repository", {{"full_name", kUpstream}}}}},
                            {"workflow",
                             {{"status", "completed"},
                              {"conclusion", "success"},
                              {"name", "nightly"},
                              {"run_id", "88"},
                              {"job_name", "all"}}}};
  HttpResult taken = callback(nightly, token("acme/two"));
  EXPECT_EQ(taken.status, 200) << taken.body;
  EXPECT_EQ(reply(taken)["status"], "completed");
  HttpResult ignored = callback(nightly, token("acme/five"));
  EXPECT_EQ(ignored.status, 200);
  EXPECT_EQ(reply(ignored), (nlohmann::json{{"ok", true},
                                            {"status", "ignored"},
                                            {"reason",
                                             "acme/five does not take part in nightly "
                                             "(allowlist events)"}}));
  auto store = open_store(store_uri_);
  auto job = store->jobs.get_job(sha + ":acme/two:88:1:all");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->head_sha, sha);  // the top-level pytorch_head_sha, checked upstream
  EXPECT_FALSE(store->jobs.get_job(sha + ":acme/five:88:1:all"));
  // The HUD's allowlist says so too.
  auto allow = reply(get("/api/crcr/allowlist"));
  EXPECT_EQ(allow["L2"][0]["events"], nlohmann::json::array({"nightly"}));
}

// Health counts the in-progress jobs past their deadline, and says when the sweeper is not
// timing them out (CRCR's blind spot, test-infra#8800); /metrics shows how fresh each nightly is.
TEST_P(CallbackIntegration, OverdueJobsAndStaleNightliesAreCounted) {
  start_relay(
      "sweeper:\n  interval_s: 600\n  zombie_timeout_s: 3600\nnightly:\n  stale_after_h: 36\n");
  auto store = open_store(store_uri_);
  auto health = reply(get("/healthz"));
  EXPECT_EQ(health["jobs_overdue"], 0);
  EXPECT_EQ(health["ok"], true);
  JobRecord stuck;
  stuck.key = "stuck";
  stuck.delivery_id = "stuck";
  stuck.repo = "acme/two";
  stuck.run_id = "1";
  stuck.workflow_name = "CI";
  stuck.event_type = "pull_request";
  stuck.level = "L2";
  stuck.status = JobStatus::kInProgress;
  stuck.in_progress_ms = stuck.created_ms = now_ms() - 3600000 - 3 * 600000 - 60000;
  JobRecord late = stuck;  // past its deadline, within the sweeper's grace
  late.key = "late";
  late.in_progress_ms = late.created_ms = now_ms() - 3600000 - 60000;
  ASSERT_TRUE(store->jobs.insert_job(late, {}));
  health = reply(get("/healthz"));
  EXPECT_EQ(health["jobs_overdue"], 1);
  EXPECT_EQ(health["jobs_overdue_unswept"], 0);
  EXPECT_EQ(health["ok"], true);
  ASSERT_TRUE(store->jobs.insert_job(stuck, {}));
  HttpResult h = get("/healthz");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(reply(h)["jobs_overdue"], 2);
  EXPECT_EQ(reply(h)["jobs_overdue_unswept"], 1);
  // Nightlies: one fresh, one 40 hours old.
  for (auto [repo, age_h] : {std::pair{"acme/two", 2}, {"acme/four", 40}}) {
    JobRecord n = stuck;
    n.key = std::string("nightly-") + repo;
    n.repo = repo;
    n.event_type = "nightly";
    n.status = JobStatus::kCompleted;
    n.conclusion = JobConclusion::kSuccess;
    n.in_progress_ms = -1;
    n.created_ms = n.completed_ms = now_ms() - age_h * 3600000;
    ASSERT_TRUE(store->jobs.insert_job(n, {}));
  }
  std::string metrics = get("/metrics").body;
  EXPECT_NE(metrics.find("ootci_jobs_overdue 2\n"), std::string::npos) << metrics;
  EXPECT_NE(
      metrics.find("# TYPE ootci_nightly_stale gauge\nootci_nightly_stale{repo=\"acme/four\"} 1\n"
                   "ootci_nightly_stale{repo=\"acme/two\"} 0\n"),
      std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("ootci_nightly_last_timestamp_seconds{repo=\"acme/two\"} "),
            std::string::npos);
  auto summary = reply(get("/api/crcr/summary"));
  ASSERT_EQ(summary["nightly_freshness"].size(), 2u);
  EXPECT_EQ(summary["nightly_freshness"][0]["repo"], "acme/four");
  EXPECT_EQ(summary["nightly_freshness"][0]["stale"], true);
  EXPECT_EQ(summary["nightly_freshness"][0]["age_h"], 40.0);
  EXPECT_EQ(summary["nightly_freshness"][1]["stale"], false);
  EXPECT_NE(get("/crcr").body.find("degraded"), std::string::npos);
}

// The level lifecycle: upstream's allowlist on the stand-in's main branch, the relay's store
// holding acme/three's recent jobs, `ootci relay sync-levels` between them.
class LevelLifecycle : public CallbackIntegration {
 protected:
  static constexpr const char* kPath = ".github/allowlist.yml";
  static constexpr const char* kBranch = "crcr-demotion/acme/three";
  const std::string upstream_text_ =
      "# CRCR allowlist\n\nL1:\n  - acme/one\n\nL2:\n  - acme/two\n\nL3:\n  # The acme device.\n"
      "  acme-dev:\n    acme/three: [ann]\n\nL4:\n  - acme/four: '@bob'\n";

  // `n` completed pull_request jobs of acme/three in the last days, `failures` of them failed.
  void jobs(int n, int failures, const std::string& tag) {
    auto store = open_store(store_uri_);
    for (int i = 0; i < n; ++i) {
      JobRecord j;
      j.key = fmt::format("{}-{}", tag, i);
      j.delivery_id = j.key;
      j.repo = "acme/three";
      j.run_id = std::to_string(5000 + i);
      j.job_name = "test";
      j.workflow_name = "CI";
      j.event_type = "pull_request";
      j.pr_number = 10 + i % 5;
      j.level = "L3";
      j.status = JobStatus::kCompleted;
      j.conclusion = i < failures ? JobConclusion::kFailure : JobConclusion::kSuccess;
      j.queue_time_ms = 120000;
      j.execution_time_ms = 1800000;
      j.created_ms = j.in_progress_ms = now_ms() - (i + 1) * 3600000;
      ASSERT_TRUE(store->jobs.insert_job(j, {}));
    }
  }
  CliRun sync(const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"relay", "sync-levels", "--config", dir_ + "/relay.yaml"};
    args.insert(args.end(), more.begin(), more.end());
    return run_ootci(args);
  }
  void write_config(const std::string& extra = "") {
    write_file(
        dir_ + "/relay.yaml",
        config("sync_levels:\n  hud_url: https://relay.example\n  always_cc: [atalman]\n" + extra));
  }
};

TEST_P(LevelLifecycle, SyncLevelsOpensRefreshesAndClosesTheDemotionPr) {
  standin_->set_file(kUpstream, "main", kPath, upstream_text_);
  jobs(10, 5, "bad");
  write_config();
  CliRun dry = sync({"--dry-run"});
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_EQ(dry.out, "would open acme/three\n");
  EXPECT_TRUE(standin_->pulls(kUpstream).empty());

  CliRun opened = sync();
  ASSERT_EQ(opened.code, 0) << opened.err;
  EXPECT_EQ(opened.out, "open acme/three #100\n");
  auto pulls = standin_->pulls(kUpstream);
  ASSERT_EQ(pulls.size(), 1u);
  EXPECT_EQ(pulls[0].head, kBranch);
  EXPECT_EQ(pulls[0].base, "main");
  EXPECT_EQ(pulls[0].title, "[CRCR] Demote acme/three from L3 to L2");
  EXPECT_EQ(pulls[0].user, standin_->app_slug() + "[bot]");
  EXPECT_EQ(pulls[0].labels,
            (std::vector<std::string>{"crcr-auto-demotion", "topic: not user facing"}));
  EXPECT_NE(pulls[0].body.find("Over the last 7 days, [`acme/three`](https://relay.example/crcr/"
                               "acme/three) missed these L3 targets:\n\n| Criterion | Measured | "
                               "L3 target |\n| --- | --- | --- |\n| Job Pass Rate | 50.0% | ≥ 90% "
                               "|\n\n"),
            std::string::npos)
      << pulls[0].body;
  EXPECT_NE(pulls[0].body.find("cc @ann @atalman"), std::string::npos);
  // The diff is the moved entry alone: the group (and its comment) left L3, L2 gained the repo.
  EXPECT_EQ(standin_->file_at(kUpstream, kBranch, kPath),
            "# CRCR allowlist\n\nL1:\n  - acme/one\n\nL2:\n  - acme/two\n  - acme/three\n\nL3:\n\n"
            "L4:\n  - acme/four: '@bob'\n");
  EXPECT_EQ(standin_->file_at(kUpstream, "main", kPath), upstream_text_);

  // Nothing changed: nothing to do.
  EXPECT_EQ(sync().out, "nothing to do\n");
  // A conflicting change lands on main: the PR is refreshed from the new main.
  std::string moved_on = upstream_text_;
  moved_on.replace(moved_on.find("  - acme/two\n"), 13, "  - acme/two\n  - acme/two-b\n");
  standin_->commit_file(kUpstream, "main", kPath, moved_on);
  CliRun refreshed = sync();
  EXPECT_EQ(refreshed.code, 0) << refreshed.err;
  EXPECT_EQ(refreshed.out, "refresh acme/three #100\n");
  EXPECT_EQ(standin_->pulls(kUpstream).size(), 1u);
  EXPECT_EQ(standin_->file_at(kUpstream, kBranch, kPath),
            demote_in_allowlist(moved_on, "acme/three"));
  EXPECT_EQ(sync().out, "nothing to do\n");  // no longer conflicting

  // The repo recovers: the PR is closed with a comment, its branch deleted.
  jobs(60, 0, "good");
  CliRun closed = sync();
  EXPECT_EQ(closed.code, 0) << closed.err;
  EXPECT_EQ(closed.out, "close acme/three #100: is back within its L3 targets\n");
  pulls = standin_->pulls(kUpstream);
  ASSERT_EQ(pulls.size(), 1u);
  EXPECT_EQ(pulls[0].state, "closed");
  EXPECT_EQ(pulls[0].comments,
            std::vector<std::string>{"`acme/three` is back within its L3 targets, so this PR is "
                                     "no longer needed. Closing it."});
  EXPECT_FALSE(standin_->has_branch(kUpstream, kBranch));
}

TEST_P(LevelLifecycle, AnAllowlistTheEditCannotKeepMinimalGetsAClearErrorAndNoPr) {
  standin_->set_file(kUpstream, "main", kPath,
                     "L2: [acme/two]\nL3:\n  acme-dev:\n    acme/three: [ann]\n");
  jobs(10, 5, "bad");
  write_config();
  CliRun r = sync();
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "sync-levels: open acme/three: .github/allowlist.yml: L2 must be in block "
            "style (line 1)\n");
  EXPECT_TRUE(standin_->pulls(kUpstream).empty());
  EXPECT_FALSE(standin_->has_branch(kUpstream, kBranch));
  // A key written twice: the same.
  standin_->commit_file(kUpstream, "main", kPath,
                        "L2:\n  - acme/two\nL3:\n  acme-dev:\n    acme/three: [ann]\n"
                        "L3:\n  other:\n    acme/x: [y]\n");
  r = sync();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("expected one top-level L3 key, found 2 (lines 3, 6)"), std::string::npos)
      << r.err;
  EXPECT_TRUE(standin_->pulls(kUpstream).empty());
}

// sync_levels.interval_s: the relay syncs by itself, from its sweeper, once per interval.
TEST_P(LevelLifecycle, TheRelaySyncsDemotionPrsOnItsOwnSchedule) {
  standin_->set_file(kUpstream, "main", kPath, upstream_text_);
  jobs(10, 5, "bad");
  start_relay("sweeper:\n  interval_s: 1\nsync_levels:\n  interval_s: 3600\n");
  std::vector<StandinPull> pulls;
  for (int i = 0; i < 100 && pulls.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pulls = standin_->pulls(kUpstream);
  }
  ASSERT_EQ(pulls.size(), 1u) << relay_->log();
  EXPECT_EQ(pulls[0].head, kBranch);
  // Once an interval: the passes after it open nothing more, and the demotion is recorded.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(standin_->pulls(kUpstream).size(), 1u);
  EXPECT_EQ(open_store(store_uri_)->levels.demotion("acme/three")->pr_number, pulls[0].number);
  EXPECT_NE(get("/metrics").body.find("ootci_sync_levels_total{outcome=\"ok\"} 1"),
            std::string::npos);
}

// While the demotion PR is open the relay creates no new check runs for the repo, on every relay
// sharing the store; a job that started before still gets its check run finished; the HUD says
// why; and check runs resume once the PR closes.
TEST_P(LevelLifecycle, ADemotionPrHoldsBackNewCheckRunsOnEveryRelayUntilItCloses) {
  standin_->set_file(kUpstream, "main", kPath, upstream_text_);
  const std::string extra = "sweeper:\n  interval_s: 1\n";
  start_relay(extra);
  // A second relay on the same PostgreSQL (SQLite: one relay per file).
  std::unique_ptr<RelayProcess> second;
  if (GetParam() == "postgres") {
    std::string d2 = dir_ + "/second";
    std::filesystem::create_directories(d2);
    std::filesystem::copy_file(dir_ + "/app.pem", d2 + "/app.pem");
    std::filesystem::copy_file(dir_ + "/allowlist.yml", d2 + "/allowlist.yml");
    int first_port = port_;
    std::string cfg = config(extra);
    second = std::make_unique<RelayProcess>(
        d2, cfg, port_, std::map<std::string, std::string>{{"TEST_WEBHOOK_SECRET", kSecret}});
    second->start();
    port_ = first_port;
  }
  auto other = [&](const nlohmann::json& body, const std::string& repo) {
    HttpRequest req;
    req.method = "POST";
    req.url = (second ? second->url() : relay_->url()) + "/github/callback";
    req.body = body.dump();
    req.headers = {{"Authorization", "Bearer " + token(repo)}};
    return http_send(req);
  };
  const std::string label = "ciflow/crcr/acme-dev";
  std::string early_sha(40, 'e'), late_sha(40, 'f'), after_sha(40, 'a');
  // Before the demotion: a labelled job starts, with its in_progress check run.
  auto early = dispatch_pr("d-early", "acme/three", early_sha, {label});
  ASSERT_EQ(callback(action_body(early, "in_progress", "acme/three"), token("acme/three")).status,
            200);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 1, 10000));

  jobs(10, 5, "bad");
  write_config(extra);
  ASSERT_EQ(sync().code, 0);
  nlohmann::json status;
  for (int i = 0; i < 100; ++i) {
    status = reply(get("/api/crcr/level-status"));
    if (status["repos"][0]["demotionPr"].is_object()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(status["repos"][0]["demotionPr"].is_object()) << status.dump();
  EXPECT_EQ(status["repos"][0]["repo"], "acme/three");
  EXPECT_EQ(status["repos"][0]["change"], "demote");
  EXPECT_EQ(status["repos"][0]["demotionPr"]["number"], 100);
  HttpResult page = get("/crcr/acme/three");
  EXPECT_NE(page.body.find("Check runs are off: demotion PR"), std::string::npos) << page.body;

  // The early job finishes: its completed check run still goes out (on the other relay).
  ASSERT_EQ(other(action_body(early, "completed", "acme/three"), "acme/three").status, 200);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 2, 10000));
  // A job that starts now gets none, on either relay; an L4 repo's jobs still do.
  auto late = dispatch_pr("d-late", "acme/three", late_sha, {label});
  ASSERT_EQ(other(action_body(late, "in_progress", "acme/three"), "acme/three").status, 200);
  ASSERT_EQ(callback(action_body(late, "completed", "acme/three"), token("acme/three")).status,
            200);
  auto l4 = dispatch_pr("d-l4-late", "acme/four", late_sha);
  ASSERT_EQ(other(action_body(l4, "in_progress", "acme/four"), "acme/four").status, 200);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 3, 10000));
  // A label during the demotion backfills nothing.
  auto lbl = nlohmann::json::parse(fixture("pull_request.labeled.json"));
  lbl["label"]["name"] = label;
  lbl["pull_request"]["head"]["sha"] = late_sha;
  EXPECT_EQ(reply(send("pull_request", "label-late", lbl.dump()))["check_runs_backfilled"], 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<std::string> made;
  for (const auto& c : check_runs())
    made.push_back(c.body["name"].get<std::string>() + " " +
                   c.body["head_sha"].get<std::string>().substr(0, 1) + " " +
                   c.body["status"].get<std::string>());
  EXPECT_EQ(made, (std::vector<std::string>{"crcr/acme/three/CI/test e in_progress",
                                            "crcr/acme/three/CI/test e completed",
                                            "crcr/acme/four/CI/test f in_progress"}));

  // The PR is closed by hand: the next sweep ends the demotion and check runs resume.
  standin_->set_pull_state(kUpstream, 100, "closed");
  for (int i = 0; i < 100; ++i) {
    status = reply(get("/api/crcr/level-status"));
    if (status["repos"][0]["demotionPr"].is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(status["repos"][0]["demotionPr"].is_null()) << status.dump();
  EXPECT_EQ(get("/crcr/acme/three").body.find("Check runs are off"), std::string::npos);
  auto after = dispatch_pr("d-after", "acme/three", after_sha, {label});
  ASSERT_EQ(other(action_body(after, "in_progress", "acme/three"), "acme/three").status, 200);
  ASSERT_TRUE(standin_->wait_for_calls("/repos/Codertocat/Hello-World/check-runs", 4, 10000));
  EXPECT_EQ(check_runs().back().body["head_sha"], after_sha);
}

INSTANTIATE_TEST_SUITE_P(Stores, LevelLifecycle, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Stores, CallbackIntegration, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
