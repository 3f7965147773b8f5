// `ootci report` end to end: the real ootci binary sends the callbacks of a real dispatch to the
// real relay (GitHub stand-in, local OIDC issuer), on SQLite and PostgreSQL.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "evidence/evidence_store.h"
#include "relay_store/store.h"
#include "testing/ootci_cli.h"
#include "testing/relay_fixture.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;

// Between `ootci report` and the relay: forwards every callback, but answers the first
// `completed` one 502 after the relay has processed it, as a load balancer dropping the
// response would.
class DroppingProxy {
 public:
  explicit DroppingProxy(std::string relay_url) : relay_url_(std::move(relay_url)) {
    server_.Post("/github/callback", [this](const httplib::Request& req, httplib::Response& res) {
      httplib::Client relay(relay_url_);
      auto r =
          relay.Post("/github/callback",
                     httplib::Headers{{"Authorization", req.get_header_value("Authorization")}},
                     req.body, "application/json");
      bool completed = json::parse(req.body, nullptr, false)["workflow"]["status"] == "completed";
      std::lock_guard<std::mutex> lock(mu_);
      if (completed && completed_requests_++ == 0) {
        relay_answers_.push_back(r ? r->status : 0);
        res.status = 502;
        res.set_content("bad gateway", "text/plain");
        return;
      }
      if (!r) {
        res.status = 504;
        return;
      }
      relay_answers_.push_back(r->status);
      res.status = r->status;
      res.set_content(r->body, "application/json");
    });
    int port = server_.bind_to_any_port("127.0.0.1");
    url_ = fmt::format("http://127.0.0.1:{}/github/callback", port);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~DroppingProxy() {
    server_.stop();
    thread_.join();
  }
  const std::string& url() const { return url_; }
  int completed_requests() const { return completed_requests_; }
  // What the relay answered each request, dropped or not (read after the client is done).
  std::vector<int> relay_answers() {
    std::lock_guard<std::mutex> lock(mu_);
    return relay_answers_;
  }

 private:
  std::string relay_url_, url_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<int> completed_requests_{0};
  std::mutex mu_;
  std::vector<int> relay_answers_;
};

class ReportIntegration : public RelayFixture {
 protected:
  // Sends a signed pull_request webhook and returns the client_payload that reached `repo`.
  json dispatch_pr(const std::string& delivery, const std::string& repo) {
    size_t before = standin_->dispatches().size();
    EXPECT_EQ(send("pull_request", delivery, fixture("pull_request.opened.json")).status, 200);
    EXPECT_TRUE(standin_->wait_for_dispatches(before + 4, 15000)) << relay_->log();
    for (const auto& d : standin_->dispatches())
      if (d.repo == repo && d.client_payload["delivery_id"] == delivery) return d.client_payload;
    ADD_FAILURE() << "no dispatch for " << repo;
    return {};
  }

  // The files `ootci report` reads: the dispatch as the workflow received it, an OIDC token,
  // and an ootci.yaml whose workspace holds an evidence store with a green and a red run.
  void prepare(const json& client_payload, const std::string& repo) {
    work_ = make_temp_dir();
    write_file(work_ + "/dispatch.json", json{{"event_type", client_payload["event_type"]},
                                              {"client_payload", client_payload}}
                                             .dump());
    write_file(work_ + "/token", oidc_->mint(oidc_->claims_for(repo)) + "\n");
    write_file(work_ + "/ootci.yaml", fmt::format("backend:\n  name: dev\n  device_type: dev\n"
                                                  "upstream:\n  torch_root: {}\n"
                                                  "test_configs: []\nworkspace: ws\n",
                                                  work_));
    auto store = EvidenceStore::open(work_ + "/ws/evidence.db");
    add_run(*store, "r-green", "success",
            {result("test_a", "mandatory_success", "passed"), result("test_c", "xfail", "failed")});
    add_run(*store, "r-red", "failure",
            {result("test_a", "mandatory_success", "passed"),
             result("test_b", "mandatory_success", "failed"),
             result("test_c", "mandatory_success", "failed"), result("test_d", "skip", "skipped"),
             result("test_e", "xfail", "xfailed")});
    std::filesystem::create_directories(work_ + "/ws/runs/r-red");
    write_file(work_ + "/ws/runs/r-red/triage_verdict.json",
               json{{"schema_version", 1},
                    {"category", "backend"},
                    {"confidence", "high"},
                    {"summary", "test_b broke on the device"},
                    {"analyzer", "ootci"}}
                   .dump());
  }

  static void add_run(EvidenceStore& store, const std::string& id, const std::string& verdict,
                      const std::vector<TestResult>& results) {
    RunInfo r;
    r.id = id;
    r.backend = "dev";
    r.config_hash = "cfg";
    r.status = RunStatus::kRunning;
    r.started_ms = 1000;
    store.begin_run(r);
    store.record_batch(id, results);
    store.finish_run(id, 2000, RunStatus::kFinished, parse_conclusion(verdict), json::object());
  }

  static TestResult result(const std::string& name, const std::string& mode,
                           const std::string& outcome) {
    TestResult t;
    t.test_id = "test_ops.py::" + name;
    t.file = "test_ops.py";
    t.name = name;
    t.mode = parse_test_mode(mode);
    t.outcome = *parse_outcome(outcome);
    if (outcome == "failed") {
      t.error_class = "RuntimeError";
      t.message = "RuntimeError: " + name + " broke";
    }
    return t;
  }

  CliRun report(const std::string& status, const std::string& url, const std::string& relay,
                const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"report",
                                     "--status",
                                     status,
                                     "--payload",
                                     work_ + "/dispatch.json",
                                     "--token-file",
                                     work_ + "/token",
                                     "--callback-url",
                                     url,
                                     "--relay",
                                     relay,
                                     "--run-id",
                                     "42",
                                     "--run-attempt",
                                     "1",
                                     "--workflow-name",
                                     "CI",
                                     "--workflow-url",
                                     "https://github.com/acme/two/actions/runs/42"};
    args.insert(args.end(), extra.begin(), extra.end());
    // The identity comes from flags, not from a CI runner this test might run in.
    return run_ootci(args, {{"OOTCI_CHECK_RUN_ID", ""}, {"GITHUB_WORKFLOW", ""}});
  }

  std::string callback_url() { return relay_->url() + "/github/callback"; }

  std::optional<JobRecord> job(const json& cp, const std::string& job_name) {
    return open_store(store_uri_)
        ->jobs.get_job(
            fmt::format("{}:acme/two:42:1:{}", cp["delivery_id"].get<std::string>(), job_name));
  }

  // The completed record of a job reported from r-red, field by field.
  static void expect_red_run_record(const JobRecord& j, const std::string& job_name) {
    EXPECT_EQ(j.status, JobStatus::kCompleted);
    EXPECT_EQ(j.conclusion.text(), "failure");
    EXPECT_EQ(j.repo, "acme/two");
    EXPECT_EQ(j.run_id, "42");
    EXPECT_EQ(j.run_attempt, 1);
    EXPECT_EQ(j.job_name, job_name);
    EXPECT_EQ(j.workflow_name, "CI");
    EXPECT_EQ(j.workflow_url, "https://github.com/acme/two/actions/runs/42");
    EXPECT_EQ(j.check_run_id, "42-1");
    EXPECT_EQ(j.event_type, "pull_request");
    EXPECT_EQ(j.pr_number, 2);
    EXPECT_EQ(j.tests_passed, 2);  // test_a, test_e (xfailed)
    EXPECT_EQ(j.tests_failed, 2);  // test_b, test_c
    EXPECT_EQ(j.tests_skipped, 1);
    EXPECT_EQ(j.tests_total, 5);
    json failed = json::parse(j.failed_tests_json);
    EXPECT_EQ(failed, (json::array({{{"name", "test_ops.py::test_b"},
                                     {"mode", "mandatory_success"},
                                     {"outcome", "failed"},
                                     {"error_class", "RuntimeError"},
                                     {"message", "RuntimeError: test_b broke"},
                                     {"newly", true}},
                                    {{"name", "test_ops.py::test_c"},
                                     {"mode", "mandatory_success"},
                                     {"outcome", "failed"},
                                     {"error_class", "RuntimeError"},
                                     {"message", "RuntimeError: test_c broke"},
                                     {"newly", false}}})));
    ASSERT_FALSE(j.triage_json.empty());
    EXPECT_EQ(json::parse(j.triage_json)["summary"], "test_b broke on the device");
  }

  std::string work_;
};

TEST_P(ReportIntegration, InProgressThenCompletedFromARunAreStoredFieldByField) {
  start_relay();
  json cp = dispatch_pr("d-report", "acme/two");
  prepare(cp, "acme/two");

  CliRun started = report("in_progress", callback_url(), "ootci", {"--job-name", "test"});
  ASSERT_EQ(started.code, 0) << started.err << relay_->log();
  EXPECT_EQ(started.out,
            "report: in_progress -> HTTP 200 {\"ok\":true,\"status\":\"in_progress\"} "
            "(1 attempt(s))\n");
  std::optional<JobRecord> running = job(cp, "test");
  ASSERT_TRUE(running);
  EXPECT_EQ(running->status, JobStatus::kInProgress);
  EXPECT_EQ(running->check_run_id, "42-1");
  EXPECT_EQ(running->head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  // The callback token of the dispatch came back with it.
  EXPECT_EQ(json::parse(running->last_body)["callback_token"], cp["callback_token"]);

  CliRun done = report("completed", callback_url(), "ootci",
                       {"--job-name", "test", "--run", "r-red", "--config", work_ + "/ootci.yaml"});
  ASSERT_EQ(done.code, 0) << done.err << relay_->log();
  EXPECT_EQ(done.out,
            "report: completed -> HTTP 200 {\"ok\":true,\"status\":\"completed\"} "
            "(1 attempt(s))\n");
  std::optional<JobRecord> j = job(cp, "test");
  ASSERT_TRUE(j);
  expect_red_run_record(*j, "test");

  // A conclusion alone (the build failed before any test ran): no counts, no failed tests.
  CliRun build_started = report("in_progress", callback_url(), "ootci", {"--job-name", "build"});
  ASSERT_EQ(build_started.code, 0) << build_started.err;
  CliRun build_failed = report("completed", callback_url(), "ootci",
                               {"--job-name", "build", "--conclusion", "failure"});
  ASSERT_EQ(build_failed.code, 0) << build_failed.err;
  std::optional<JobRecord> b = job(cp, "build");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, JobStatus::kCompleted);
  EXPECT_EQ(b->conclusion.text(), "failure");
  EXPECT_EQ(b->tests_total, 0);
  EXPECT_EQ(b->failed_tests_json, "");
  EXPECT_TRUE(json::parse(b->last_body)["workflow"]["test_results"].is_null());
}

TEST_P(ReportIntegration, ARetryAfterADroppedResponseIsNoErrorAndNoDuplicate) {
  start_relay();
  json cp = dispatch_pr("d-drop", "acme/two");
  prepare(cp, "acme/two");
  DroppingProxy proxy(relay_->url());
  std::vector<std::string> run = {"--job-name", "test",     "--run",
                                  "r-red",      "--config", work_ + "/ootci.yaml"};

  ASSERT_EQ(report("in_progress", proxy.url(), "ootci", {"--job-name", "test"}).code, 0);
  CliRun done = report("completed", proxy.url(), "ootci", run);
  ASSERT_EQ(done.code, 0) << done.err << relay_->log();
  EXPECT_EQ(
      done.out,
      "report: completed -> HTTP 200 {\"duplicate\":true,\"ok\":true,\"status\":\"completed\"} "
      "(2 attempt(s))\n");
  EXPECT_NE(done.err.find("callback attempt 1/5 got HTTP 502; retrying in 1000 ms"),
            std::string::npos)
      << done.err;
  EXPECT_EQ(proxy.completed_requests(), 2);
  // The relay applied the first attempt and recognised the second as the same callback.
  EXPECT_EQ(proxy.relay_answers(), (std::vector<int>{200, 200, 200}));

  std::vector<JobRecord> records;
  for (const JobRecord& j :
       open_store(store_uri_)->jobs.jobs_for_sha("ec26c3e57ca3a959ca5aad62de7213c562f8c821"))
    if (j.delivery_id == "d-drop" && j.repo == "acme/two") records.push_back(j);
  ASSERT_EQ(records.size(), 1u);
  expect_red_run_record(records[0], "test");
}

TEST_P(ReportIntegration, CrcrModeMakesOneAttemptAndFailsOnADroppedResponse) {
  start_relay();
  json cp = dispatch_pr("d-crcr", "acme/two");
  prepare(cp, "acme/two");
  DroppingProxy proxy(relay_->url());
  ASSERT_EQ(report("in_progress", proxy.url(), "crcr", {"--job-name", "test"}).code, 0);
  CliRun done = report("completed", proxy.url(), "crcr",
                       {"--job-name", "test", "--run", "r-red", "--config", work_ + "/ootci.yaml"});
  EXPECT_EQ(done.code, 1);
  EXPECT_EQ(done.out, "report: completed -> HTTP 502 bad gateway (1 attempt(s))\n");
  EXPECT_NE(done.err.find("error: the relay at " + proxy.url() +
                          " did not accept the completed callback: HTTP 502 bad gateway"),
            std::string::npos)
      << done.err;
  EXPECT_EQ(proxy.completed_requests(), 1);
  // PyTorch's relay would have stored it too: the client just never learnt.
  std::optional<JobRecord> j = job(cp, "test");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, JobStatus::kCompleted);
}

TEST_P(ReportIntegration, SettingsComeFromTheReportSectionOfOotciYaml) {
  start_relay();
  json cp = dispatch_pr("d-yaml", "acme/two");
  prepare(cp, "acme/two");
  DroppingProxy proxy(relay_->url());
  // token_file is relative to ootci.yaml; relay: ootci is what makes the dropped response safe.
  std::string yaml =
      read_file(work_ + "/ootci.yaml") + fmt::format(
                                             "report:\n  callback_url: {}\n  relay: ootci\n"
                                             "  max_attempts: 2\n  token_file: token\n"
                                             "  workflow_name: CI from yaml\n",
                                             proxy.url());
  write_file(work_ + "/ootci.yaml", yaml);
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "report",   "--payload", work_ + "/dispatch.json", "--config", work_ + "/ootci.yaml",
        "--run-id", "42",        "--run-attempt",          "1",        "--job-name",
        "test"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ootci(args, {{"OOTCI_CHECK_RUN_ID", ""}, {"GITHUB_WORKFLOW", ""}});
  };
  CliRun started = run({"--status", "in_progress"});
  ASSERT_EQ(started.code, 0) << started.err;
  CliRun done = run({"--status", "completed", "--run", "r-red"});
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_NE(done.out.find("(2 attempt(s))"), std::string::npos) << done.out;
  std::optional<JobRecord> j = job(cp, "test");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->workflow_name, "CI from yaml");
  EXPECT_EQ(j->conclusion.text(), "failure");
  EXPECT_EQ(j->tests_total, 5);
}

TEST_P(ReportIntegration, DryRunPrintsTheBodyAndSendsNothing) {
  start_relay();
  json cp = dispatch_pr("d-dry", "acme/two");
  prepare(cp, "acme/two");
  CliRun dry = run_ootci({"report",
                          "--status",
                          "completed",
                          "--payload",
                          work_ + "/dispatch.json",
                          "--run-id",
                          "42",
                          "--run-attempt",
                          "1",
                          "--workflow-name",
                          "CI",
                          "--job-name",
                          "test",
                          "--run",
                          "r-red",
                          "--config",
                          work_ + "/ootci.yaml",
                          "--completed-at",
                          "2026-11-29T10:20:00Z",
                          "--dry-run"},
                         {{"OOTCI_CHECK_RUN_ID", ""}});
  ASSERT_EQ(dry.code, 0) << dry.err;
  json body = json::parse(dry.out);
  EXPECT_EQ(body["delivery_id"], "d-dry");
  EXPECT_EQ(body["callback_token"], cp["callback_token"]);
  EXPECT_EQ(body["payload"], cp["payload"]);
  EXPECT_EQ(body["workflow"]["conclusion"], "failure");
  EXPECT_EQ(body["workflow"]["completed_at"], "2026-11-29T10:20:00Z");
  EXPECT_EQ(body["workflow"]["test_results"],
            (json{{"passed", 2}, {"failed", 2}, {"skipped", 1}, {"total", 5}}));
  EXPECT_EQ(body["failed_tests_detail"].size(), 2u);
  // report.relay defaults to crcr: the verdict goes where upstream reads it.
  EXPECT_EQ(body["workflow"]["triage_verdict"]["category"], "backend");
  EXPECT_FALSE(body.contains("triage_verdict"));
  EXPECT_FALSE(job(cp, "test"));
}

INSTANTIATE_TEST_SUITE_P(Stores, ReportIntegration, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
