#include "job/callback_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "base/error.h"
#include "testing/relay_process.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;

// An httplib::Server on 127.0.0.1 for the duration of a test.
class LocalServer {
 public:
  httplib::Server server;
  ~LocalServer() {
    server.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string start() {
    int port = server.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server.listen_after_bind(); });
    return "http://127.0.0.1:" + std::to_string(port);
  }

 private:
  std::thread thread_;
};

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

json client_payload() {
  return {{"event_type", "pull_request"},
          {"delivery_id", "d-123"},
          {"payload", {{"action", "opened"}, {"pull_request", {{"number", 7}}}}},
          {"callback_token", "cb-token"}};
}

WorkflowIdentity identity() {
  WorkflowIdentity w;
  w.name = "CI";
  w.url = "https://github.com/acme/dev/actions/runs/42";
  w.run_id = "42";
  w.run_attempt = "2";
  w.job_name = "test";
  return w;
}

// --- build_callback_body ---

TEST(BuildCallbackBody, InProgressFieldByField) {
  json b = build_callback_body(client_payload(), JobStatus::kInProgress, identity(), std::nullopt,
                               "", "ootci");
  EXPECT_EQ(b["event_type"], "pull_request");
  EXPECT_EQ(b["delivery_id"], "d-123");
  EXPECT_EQ(b["payload"], client_payload()["payload"]);
  EXPECT_EQ(b["callback_token"], "cb-token");
  EXPECT_FALSE(b.contains("failed_tests_detail"));
  EXPECT_FALSE(b.contains("triage_verdict"));
  const json& w = b["workflow"];
  EXPECT_EQ(w["schema_version"], "1");
  EXPECT_EQ(w["status"], "in_progress");
  EXPECT_TRUE(w["conclusion"].is_null());
  EXPECT_EQ(w["name"], "CI");
  EXPECT_EQ(w["url"], "https://github.com/acme/dev/actions/runs/42");
  EXPECT_EQ(w["run_id"], "42");
  EXPECT_EQ(w["run_attempt"], "2");
  EXPECT_EQ(w["job_name"], "test");
  EXPECT_EQ(w["check_run_id"], "42-2");  // CRCR's action's fallback
  ASSERT_TRUE(w["started_at"].is_string());
  EXPECT_TRUE(std::regex_match(w["started_at"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << w["started_at"];
  EXPECT_TRUE(w["completed_at"].is_null());
  EXPECT_TRUE(w["test_results"].is_null());
  EXPECT_FALSE(w.contains("artifact_url"));
  EXPECT_EQ(w.size(), 12u) << w.dump();

  WorkflowIdentity given = identity();
  given.started_at = "2026-11-29T10:00:00Z";
  given.check_run_id = "987";
  json b2 = build_callback_body(client_payload(), JobStatus::kInProgress, given, std::nullopt,
                                "https://artifacts.example/42", "ootci");
  EXPECT_EQ(b2["workflow"]["started_at"], "2026-11-29T10:00:00Z");
  EXPECT_EQ(b2["workflow"]["check_run_id"], "987");
  EXPECT_EQ(b2["workflow"]["artifact_url"], "https://artifacts.example/42");
}

TEST(BuildCallbackBody, CompletedFieldByField) {
  RunOutcome o;
  o.conclusion = Conclusion::kFailure;
  o.passed = 10;
  o.failed = 2;
  o.skipped = 3;
  o.total = 15;
  o.failed_tests = json::array({{{"name", "t::a"}, {"message", "boom"}, {"newly", true}},
                                {{"name", "t::b"}, {"message", "bang"}, {"newly", false}}});
  o.triage_verdict = {{"schema_version", 1}, {"category", "backend"}, {"confidence", "high"}};
  WorkflowIdentity w = identity();
  w.completed_at = "2026-11-29T10:20:00Z";
  json b = build_callback_body(client_payload(), JobStatus::kCompleted, w, o, "", "ootci");
  const json& wf = b["workflow"];
  EXPECT_EQ(wf["status"], "completed");
  EXPECT_EQ(wf["conclusion"], "failure");
  EXPECT_TRUE(wf["started_at"].is_null());
  EXPECT_EQ(wf["completed_at"], "2026-11-29T10:20:00Z");
  EXPECT_EQ(wf["test_results"],
            (json{{"passed", 10}, {"failed", 2}, {"skipped", 3}, {"total", 15}}));
  // Top level, beside workflow, where the relay reads them.
  EXPECT_EQ(b["failed_tests_detail"], o.failed_tests);
  EXPECT_EQ(b["triage_verdict"], o.triage_verdict);
  EXPECT_FALSE(wf.contains("failed_tests_detail"));
  EXPECT_FALSE(wf.contains("triage_verdict"));
  // Upstream CRCR reads it inside workflow, with the analyzer as an object.
  o.triage_verdict["analyzer"] = "ootci";
  json upstream = build_callback_body(client_payload(), JobStatus::kCompleted, w, o, "", "crcr");
  EXPECT_FALSE(upstream.contains("triage_verdict"));
  EXPECT_EQ(upstream["workflow"]["triage_verdict"]["category"], "backend");
  EXPECT_EQ(upstream["workflow"]["triage_verdict"]["analyzer"], (json{{"name", "ootci"}}));

  // Without a given time, completed_at is now; started_at stays null unless given.
  w.completed_at = "";
  w.started_at = "2026-11-29T10:00:00Z";
  json now = build_callback_body(client_payload(), JobStatus::kCompleted, w, o, "", "ootci");
  EXPECT_TRUE(now["workflow"]["completed_at"].is_string());
  EXPECT_EQ(now["workflow"]["started_at"], "2026-11-29T10:00:00Z");
}

TEST(BuildCallbackBody, AConclusionWithoutResultsHasNoSummaryOrDetail) {
  RunOutcome o;
  o.conclusion = Conclusion::kFailure;  // e.g. the build broke before any test ran
  json b = build_callback_body(client_payload(), JobStatus::kCompleted, identity(), o, "", "ootci");
  EXPECT_EQ(b["workflow"]["conclusion"], "failure");
  EXPECT_TRUE(b["workflow"]["test_results"].is_null());
  EXPECT_FALSE(b.contains("failed_tests_detail"));
  EXPECT_FALSE(b.contains("triage_verdict"));
  // No callback_token in the dispatch, none in the body; no event_type, none either.
  json cp = client_payload();
  cp.erase("callback_token");
  cp.erase("event_type");
  json b2 = build_callback_body(cp, JobStatus::kCompleted, identity(), o, "", "ootci");
  EXPECT_FALSE(b2.contains("callback_token"));
  EXPECT_FALSE(b2.contains("event_type"));
}

TEST(BuildCallbackBody, BadInputNamesTheField) {
  RunOutcome o;
  o.conclusion = Conclusion::kSuccess;
  auto build = [&](json cp, std::string status, WorkflowIdentity w, std::optional<RunOutcome> out) {
    return error_of(
        [&] { build_callback_body(cp, parse_callback_status(status), w, out, "", "ootci"); });
  };
  WorkflowIdentity bad_run = identity();
  bad_run.run_id = "4 x";
  EXPECT_EQ(build(client_payload(), "in_progress", bad_run, std::nullopt),
            "workflow.run_id: must be an integer, or an id of at most 64 letters, digits, '-', '_' "
            "or '.' starting with a letter or digit, got '4 x'");
  bad_run.run_id = "";
  EXPECT_NE(build(client_payload(), "in_progress", bad_run, std::nullopt).find("got ''"),
            std::string::npos);
  bad_run.run_id = "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11";  // a Buildkite build UUID
  EXPECT_EQ(build(client_payload(), "in_progress", bad_run, std::nullopt), "");
  bad_run.run_id = "0";
  EXPECT_NE(build(client_payload(), "in_progress", bad_run, std::nullopt).find("workflow.run_id"),
            std::string::npos);
  WorkflowIdentity bad_attempt = identity();
  bad_attempt.run_attempt = "first";
  EXPECT_EQ(build(client_payload(), "in_progress", bad_attempt, std::nullopt),
            "workflow.run_attempt: must be a positive integer, got 'first'");
  WorkflowIdentity nameless = identity();
  nameless.name = "";
  EXPECT_EQ(build(client_payload(), "in_progress", nameless, std::nullopt),
            "workflow.name: required");
  json no_delivery = client_payload();
  no_delivery.erase("delivery_id");
  EXPECT_EQ(build(no_delivery, "in_progress", identity(), std::nullopt),
            "client_payload.delivery_id: missing (expected a non-empty string)");
  json no_payload = client_payload();
  no_payload.erase("payload");
  EXPECT_EQ(build(no_payload, "in_progress", identity(), std::nullopt),
            "client_payload.payload: missing (expected an object)");
  EXPECT_EQ(build(client_payload(), "queued", identity(), std::nullopt),
            "workflow.status: must be in_progress or completed, got 'queued'");
  EXPECT_EQ(build(client_payload(), "completed", identity(), std::nullopt),
            "workflow.conclusion: a completed callback needs one");
  EXPECT_EQ(build(client_payload(), "completed", identity(), o), "");
}

TEST(BuildCallbackBody, FailedTestsDetailKeepsTheBodyWithinTwoMegabytes) {
  RunOutcome o;
  o.conclusion = Conclusion::kFailure;
  o.failed = o.total = 1000;
  for (int i = 0; i < 1000; ++i)
    o.failed_tests.push_back(
        {{"name", "t::" + std::to_string(i)}, {"message", std::string(1024, 'm')}});
  json cp = client_payload();
  cp["payload"]["big"] = std::string(1500 * 1024, 'p');  // a huge upstream webhook
  json b = build_callback_body(cp, JobStatus::kCompleted, identity(), o, "", "ootci");
  EXPECT_LE(b.dump().size(), 2u * 1024 * 1024 - 16 * 1024);
  ASSERT_TRUE(b.contains("failed_tests_detail"));
  size_t kept = b["failed_tests_detail"].size();
  EXPECT_GT(kept, 100u);
  EXPECT_LT(kept, 1000u);
  EXPECT_EQ(b["failed_tests_detail"][0]["name"], "t::0");    // the first (newly failing) stay
  EXPECT_EQ(b["workflow"]["test_results"]["failed"], 1000);  // the count is not cut
}

// --- outcome_of_run on a real SQLite store ---

class OutcomeOfRun : public ::testing::Test {
 protected:
  void SetUp() override { store_ = EvidenceStore::open(make_temp_dir() + "/ws/evidence.db"); }

  void add_run(const std::string& id, const std::string& status, const std::string& verdict,
               const std::vector<TestResult>& results, int64_t started_ms) {
    RunInfo r;
    r.id = id;
    r.backend = "dev";
    r.config_hash = "cfg-1";
    r.status = RunStatus::kRunning;
    r.started_ms = started_ms;
    store_->begin_run(r);
    store_->record_batch(id, results);
    store_->finish_run(id, started_ms + 1000, *parse_run_status(status), parse_conclusion(verdict),
                       json::object());
  }

  static TestResult result(const std::string& name, const std::string& mode,
                           const std::string& outcome, const std::string& message = "") {
    TestResult t;
    t.test_id = "test_ops.py::TestOps::" + name;
    t.file = "test_ops.py";
    t.cls = "TestOps";
    t.name = name;
    t.mode = parse_test_mode(mode);
    t.outcome = *parse_outcome(outcome);
    if (outcome == "failed" || outcome == "error") {
      t.error_class = "RuntimeError";
      t.message = message.empty() ? "RuntimeError: " + name : message;
    }
    t.finished_ms = 1;
    return t;
  }

  std::unique_ptr<EvidenceStore> store_;
};

TEST_F(OutcomeOfRun, CountsAndFailingTestsNewlyFirst) {
  // The last green run: test_c already failed there (allowed as an xfail).
  add_run("r-green", "finished", "success",
          {result("test_a", "mandatory_success", "passed"),
           result("test_b", "mandatory_success", "passed"), result("test_c", "xfail", "failed")},
          1000);
  add_run("r-red", "finished", "failure",
          {result("test_a", "mandatory_success", "passed"),
           result("test_b", "mandatory_success", "failed"),
           result("test_c", "mandatory_success", "failed"), result("test_d", "skip", "skipped"),
           result("test_e", "xfail", "xfailed"), result("test_f", "", "error"),
           result("test_g", "xfail", "failed")},  // an expected failure: not failing the run
          5000);
  RunOutcome o = outcome_of_run(*store_, "r-red");
  EXPECT_EQ(o.conclusion, Conclusion::kFailure);
  EXPECT_EQ(o.total, 7);
  EXPECT_EQ(o.failed, 3);
  EXPECT_EQ(o.skipped, 1);
  EXPECT_EQ(o.passed, 3);  // a, e, g: whatever neither fails the run nor was skipped
  EXPECT_TRUE(o.triage_verdict.is_null());
  ASSERT_EQ(o.failed_tests.size(), 3u) << o.failed_tests.dump();
  EXPECT_EQ(o.failed_tests[0], (json{{"name", "test_ops.py::TestOps::test_b"},
                                     {"mode", "mandatory_success"},
                                     {"outcome", "failed"},
                                     {"error_class", "RuntimeError"},
                                     {"message", "RuntimeError: test_b"},
                                     {"newly", true}}));
  EXPECT_EQ(o.failed_tests[1]["name"], "test_ops.py::TestOps::test_f");
  EXPECT_EQ(o.failed_tests[1]["outcome"], "error");
  EXPECT_EQ(o.failed_tests[1]["newly"], true);
  EXPECT_EQ(o.failed_tests[2]["name"], "test_ops.py::TestOps::test_c");
  EXPECT_EQ(o.failed_tests[2]["newly"], false);  // already failing in the last green run

  // A green run is judged against the green run before it, not against itself.
  add_run("r-green2", "finished", "success",
          {result("test_a", "mandatory_success", "passed"), result("test_c", "xfail", "failed")},
          9000);
  RunOutcome green = outcome_of_run(*store_, "r-green2");
  EXPECT_EQ(green.conclusion, Conclusion::kSuccess);
  EXPECT_EQ(green.total, 2);
  EXPECT_EQ(green.failed, 0);
  EXPECT_EQ(green.passed, 2);
  EXPECT_TRUE(green.failed_tests.empty());
}

TEST_F(OutcomeOfRun, AnInterruptedRunIsCancelledAndAnUnknownRunIsAnError) {
  add_run("r-stopped", "interrupted", "", {result("test_a", "mandatory_success", "passed")}, 1000);
  EXPECT_EQ(outcome_of_run(*store_, "r-stopped").conclusion, Conclusion::kCancelled);
  EXPECT_EQ(error_of([&] { outcome_of_run(*store_, "r-nope"); }),
            "run r-nope not found in the evidence store");
}

TEST_F(OutcomeOfRun, CapsEntriesAndCutsMessagesAtACharacterBoundary) {
  std::vector<TestResult> results;
  // "x" then 2-byte characters: byte 1024 falls in the middle of one.
  std::string long_message = "x";
  for (int i = 0; i < 2500; ++i) long_message += "\xC3\xA9";  // é
  ASSERT_EQ(long_message.size(), 5001u);
  for (int i = 0; i < 1500; ++i)
    results.push_back(result(fmt::format("test_{:04}", i), "mandatory_success", "failed",
                             i == 0 ? long_message : ""));
  add_run("r-many", "finished", "failure", results, 1000);
  RunOutcome o = outcome_of_run(*store_, "r-many");
  EXPECT_EQ(o.failed, 1500);
  EXPECT_EQ(o.total, 1500);
  ASSERT_EQ(o.failed_tests.size(), 1000u);
  std::string cut = o.failed_tests[0]["message"];
  EXPECT_EQ(cut.size(), 1023u);  // 1024 would split an é
  EXPECT_EQ(cut, long_message.substr(0, 1023));
  EXPECT_EQ(o.failed_tests[999]["name"], "test_ops.py::TestOps::test_0999");

  json b = build_callback_body(client_payload(), JobStatus::kCompleted, identity(), o, "", "ootci");
  EXPECT_EQ(b["failed_tests_detail"].size(), 1000u);
  EXPECT_EQ(b["workflow"]["test_results"]["failed"], 1500);
}

// --- workflow_from_environment ---

TEST(WorkflowFromEnvironment, ReadsGitHubActionsVariables) {
  WorkflowIdentity w =
      workflow_from_environment(env_of({{"GITHUB_WORKFLOW", "CI"},
                                        {"GITHUB_SERVER_URL", "https://github.com"},
                                        {"GITHUB_REPOSITORY", "acme/dev"},
                                        {"GITHUB_RUN_ID", "123456"},
                                        {"GITHUB_RUN_ATTEMPT", "3"},
                                        {"GITHUB_JOB", "test-cpu"},
                                        {"OOTCI_CHECK_RUN_ID", "777"}}));
  EXPECT_EQ(w.name, "CI");
  EXPECT_EQ(w.url, "https://github.com/acme/dev/actions/runs/123456");
  EXPECT_EQ(w.run_id, "123456");
  EXPECT_EQ(w.run_attempt, "3");
  EXPECT_EQ(w.job_name, "test-cpu");
  EXPECT_EQ(w.check_run_id, "777");
  EXPECT_EQ(w.started_at, "");
  EXPECT_EQ(w.completed_at, "");

  WorkflowIdentity none = workflow_from_environment(env_of({{"GITHUB_RUN_ID", "9"}}));
  EXPECT_EQ(none.name, "");
  EXPECT_EQ(none.url, "");  // no server or repository to build it from
  EXPECT_EQ(none.run_id, "9");
  EXPECT_EQ(none.run_attempt, "1");
  EXPECT_EQ(none.job_name, "");
  EXPECT_EQ(none.check_run_id, "");
}

// --- fetch_oidc_token ---

TEST(FetchOidcToken, FromAFileTrimmed) {
  std::string dir = make_temp_dir();
  write_file(dir + "/token", "  eyJ.token.sig \n");
  ReportSettings s;
  s.token_file = dir + "/token";
  s.token_command = {"/bin/sh", "-c", "echo from-command"};  // the file wins
  EXPECT_EQ(fetch_oidc_token(s, env_of({})), "eyJ.token.sig");
  s.token_file = dir + "/absent";
  EXPECT_EQ(error_of([&] { fetch_oidc_token(s, env_of({})); }),
            "report.token_file " + dir + "/absent: cannot read it");
  write_file(dir + "/empty", "\n");
  s.token_file = dir + "/empty";
  EXPECT_EQ(error_of([&] { fetch_oidc_token(s, env_of({})); }),
            "report.token_file " + dir + "/empty: empty");
}

TEST(FetchOidcToken, FromACommandWithTheAudienceExpanded) {
  ReportSettings s;
  s.audience = "aud-x";
  s.token_command = {"/bin/sh", "-c", "echo \"  tok-$1 \"; echo noise >&2", "sh", "for:{audience}"};
  EXPECT_EQ(fetch_oidc_token(s, env_of({})), "tok-for:aud-x");
  s.token_command = {"/bin/sh", "-c", "echo denied >&2; exit 3"};
  std::string why = error_of([&] { fetch_oidc_token(s, env_of({})); });
  EXPECT_NE(why.find("report.token_command /bin/sh failed (exit 3): denied"), std::string::npos)
      << why;
  s.token_command = {"/bin/true"};
  EXPECT_EQ(error_of([&] { fetch_oidc_token(s, env_of({})); }),
            "report.token_command /bin/true: printed no token");
}

TEST(FetchOidcToken, FromTheGitHubActionsEndpoint) {
  LocalServer gh;
  std::vector<std::string> queries;
  gh.server.Get("/idtoken", [&](const httplib::Request& req, httplib::Response& res) {
    queries.push_back(req.get_param_value("api-version") + " " + req.get_param_value("audience"));
    if (req.get_header_value("Authorization") != "bearer request-token") {
      res.status = 401;
      res.set_content(R"({"message":"bad token"})", "application/json");
      return;
    }
    res.set_content(json{{"value", "jwt-for-" + req.get_param_value("audience")}}.dump(),
                    "application/json");
  });
  std::string url = gh.start();
  ReportSettings s;
  s.audience = "pytorch-cross-repo-ci-relay";
  auto env = env_of({{"ACTIONS_ID_TOKEN_REQUEST_URL", url + "/idtoken?api-version=2.0"},
                     {"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "request-token"}});
  EXPECT_EQ(fetch_oidc_token(s, env), "jwt-for-pytorch-cross-repo-ci-relay");
  // A URL without a query gets '?'.
  auto no_query = env_of({{"ACTIONS_ID_TOKEN_REQUEST_URL", url + "/idtoken"},
                          {"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "request-token"}});
  s.audience = "a b";
  EXPECT_EQ(fetch_oidc_token(s, no_query), "jwt-for-a b");
  EXPECT_EQ(queries, (std::vector<std::string>{"2.0 pytorch-cross-repo-ci-relay", " a b"}));
  auto wrong = env_of({{"ACTIONS_ID_TOKEN_REQUEST_URL", url + "/idtoken"},
                       {"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "stolen"}});
  EXPECT_EQ(error_of([&] { fetch_oidc_token(s, wrong); }),
            R"(GitHub Actions OIDC token request answered HTTP 401: {"message":"bad token"})");
}

TEST(FetchOidcToken, NothingAvailableSaysWhatToSet) {
  EXPECT_EQ(error_of([] { fetch_oidc_token(ReportSettings{}, env_of({})); }),
            "no OIDC token: set report.token_file or report.token_command, or run in GitHub "
            "Actions with permissions: id-token: write");
  // Half of GitHub's pair is not enough.
  EXPECT_NE(error_of([] {
              fetch_oidc_token(ReportSettings{},
                               env_of({{"ACTIONS_ID_TOKEN_REQUEST_URL", "http://127.0.0.1:1/"}}));
            }).find("no OIDC token"),
            std::string::npos);
}

// --- post_callback ---

struct Answer {
  int status;
  std::string retry_after;  // "" for none
};

// A relay stand-in answering POST /github/callback from a script, recording what arrived.
class ScriptedRelay {
 public:
  explicit ScriptedRelay(std::deque<Answer> script) : script_(std::move(script)) {
    server_.server.Post("/github/callback",
                        [this](const httplib::Request& req, httplib::Response& res) {
                          std::lock_guard<std::mutex> lock(mu_);
                          bodies.push_back(req.body);
                          auth.push_back(req.get_header_value("Authorization"));
                          Answer a = script_.empty() ? Answer{200, ""} : script_.front();
                          if (!script_.empty()) script_.pop_front();
                          res.status = a.status;
                          if (!a.retry_after.empty()) res.set_header("Retry-After", a.retry_after);
                          res.set_content(json{{"answer", a.status}}.dump(), "application/json");
                        });
    url = server_.start() + "/github/callback";
  }
  std::string url;
  std::vector<std::string> bodies, auth;

 private:
  LocalServer server_;
  std::mutex mu_;
  std::deque<Answer> script_;
};

ReportSettings settings_for(const std::string& url, const std::string& relay) {
  ReportSettings s;
  s.callback_url = url;
  s.relay = relay;
  s.max_attempts = 5;
  s.timeout_s = 5;
  return s;
}

TEST(PostCallback, OotciRetries5xxAnd429HonouringRetryAfter) {
  ScriptedRelay relay({{503, "7"}, {503, ""}, {429, "2"}, {502, ""}, {200, ""}});
  std::vector<int64_t> sleeps;
  json body = {{"delivery_id", "d-1"}, {"workflow", {{"status", "completed"}}}};
  PostOutcome out = post_callback(settings_for(relay.url, "ootci"), "jwt", body,
                                  [&](int64_t ms) { sleeps.push_back(ms); });
  EXPECT_TRUE(out.ok());
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(out.body, R"({"answer":200})");
  EXPECT_EQ(out.attempts, 5);
  // Retry-After when sent; otherwise 1 s, 2 s, 4 s, ... (doubling on every retry).
  EXPECT_EQ(sleeps, (std::vector<int64_t>{7000, 2000, 2000, 8000}));
  ASSERT_EQ(relay.bodies.size(), 5u);
  for (const auto& b : relay.bodies) EXPECT_EQ(b, body.dump());  // the same bytes every time
  for (const auto& a : relay.auth) EXPECT_EQ(a, "Bearer jwt");
}

TEST(PostCallback, OotciGivesUpAfterMaxAttempts) {
  ScriptedRelay relay({{503, ""}, {503, ""}, {503, ""}, {200, ""}});
  std::vector<int64_t> sleeps;
  ReportSettings s = settings_for(relay.url, "ootci");
  s.max_attempts = 3;
  PostOutcome out =
      post_callback(s, "jwt", json::object(), [&](int64_t ms) { sleeps.push_back(ms); });
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(out.status, 503);
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(sleeps, (std::vector<int64_t>{1000, 2000}));
  EXPECT_EQ(relay.bodies.size(), 3u);
}

TEST(PostCallback, ClientErrorsAreNeverRetried) {
  for (int status : {400, 401, 403, 409}) {
    ScriptedRelay relay({{status, ""}, {200, ""}});
    std::vector<int64_t> sleeps;
    PostOutcome out = post_callback(settings_for(relay.url, "ootci"), "jwt", json::object(),
                                    [&](int64_t ms) { sleeps.push_back(ms); });
    EXPECT_EQ(out.status, status);
    EXPECT_EQ(out.attempts, 1);
    EXPECT_TRUE(sleeps.empty());
    EXPECT_EQ(relay.bodies.size(), 1u);
  }
}

TEST(PostCallback, CrcrMakesExactlyOneAttempt) {
  ScriptedRelay relay({{503, "1"}, {200, ""}});
  std::vector<int64_t> sleeps;
  PostOutcome out = post_callback(settings_for(relay.url, "crcr"), "jwt", json::object(),
                                  [&](int64_t ms) { sleeps.push_back(ms); });
  EXPECT_EQ(out.status, 503);
  EXPECT_EQ(out.attempts, 1);
  EXPECT_TRUE(sleeps.empty());
  EXPECT_EQ(relay.bodies.size(), 1u);
}

TEST(PostCallback, NetworkErrorsAreRetriedAndReported) {
  int port = free_port();  // bound and closed: nobody listens there
  std::vector<int64_t> sleeps;
  ReportSettings s =
      settings_for(fmt::format("http://127.0.0.1:{}/github/callback", port), "ootci");
  s.max_attempts = 2;
  PostOutcome out =
      post_callback(s, "jwt", json::object(), [&](int64_t ms) { sleeps.push_back(ms); });
  EXPECT_EQ(out.status, 0);
  EXPECT_EQ(out.attempts, 2);
  EXPECT_FALSE(out.error.empty());
  EXPECT_EQ(sleeps, (std::vector<int64_t>{1000}));
  EXPECT_EQ(error_of([] { post_callback(ReportSettings{}, "jwt", json::object()); }),
            "report.callback_url: not set (the relay's <url>/github/callback)");
}

}  // namespace
}  // namespace ootci
