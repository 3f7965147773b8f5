// `ootci agent` end to end: the real relay dispatches a real GitHub webhook through the generic
// webhook transport to the real agent, which runs a real upstream PyTorch test file on the
// reference backend and reports back with OIDC tokens from the local issuer. The relay's stored
// job record is then checked field by field. Also: restart with a queued job, a newer dispatch
// for the same PR cancelling the older one, and a PR's staged selection run in two waves.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/sha256.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "evidence/evidence_store.h"
#include "net/crypto.h"
#include "relay_store/store.h"
#include "select/git.h"
#include "testing/agent_config.h"
#include "testing/relay_fixture.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

constexpr const char* kAgentSecret = "agent-secret-for-tests";
constexpr const char* kHeadSha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

class AgentIntegration : public RelayFixture {
 protected:
  void SetUp() override {
    RelayFixture::SetUp();
    const char* torch_root = std::getenv("TORCH_ROOT");
    if (!torch_root || !*torch_root) torch_root = OOTCI_TORCH_ROOT;
    if (!fs::exists(fs::path(torch_root) / "test/test_view_ops.py"))
      FAIL() << "TORCH_ROOT must name the upstream PyTorch tree (scripts/setup prepares it)";
    torch_root_ = torch_root;
    agent_port_ = free_port();
  }

  void TearDown() override { stop_agent(); }

  // The reference backend with one upstream file (test_view_ops.py: 260 variants, ~10 s), a gate
  // for the fixtures' `master` base, and callbacks to the relay with issuer-minted tokens.
  // `agent_extra` is appended to agent.yaml; `backend_env` is ootci.yaml's backend.env;
  // `token_command` replaces report.token_command (a YAML flow list).
  void write_backend(const std::string& agent_extra = "", const std::string& backend_env = "{}",
                     std::string token_command = "", std::string torch_root = "") {
    std::string ref = source_dir() + "/examples/reference-backend";
    if (token_command.empty())
      token_command =
          fmt::format(R"([/usr/bin/curl, -sf, "{}/token?repository=acme/two"])", oidc_->issuer());
    if (torch_root.empty()) torch_root = torch_root_;
    write_file(dir_ + "/ootci.yaml",
               reference_backend_yaml(ref, torch_root, relay_->url(), token_command, backend_env));
    write_file(dir_ + "/agent.yaml", agent_yaml(agent_port_, agent_extra));
  }

  void start_relay_to_agent() {
    start_relay(agent_downstream_yaml("acme/two", agent_port_),
                {{"TEST_AGENT_SECRET", kAgentSecret}});
  }

  void start_agent() {
    SpawnOptions o;
    o.argv = {binary_dir() + "/ootci", "agent", "--config", dir_ + "/agent.yaml"};
    o.env = {{"TEST_AGENT_SECRET", kAgentSecret}};
    o.output_file = dir_ + "/agent.log";
    agent_ = Subprocess::spawn(o);
    for (int i = 0; i < 200; ++i) {
      if (agent_get("/healthz").status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "agent did not start:\n" << agent_log();
  }

  void kill_agent() {
    if (agent_) agent_->kill_group();
    if (agent_) agent_->wait();
    agent_.reset();
  }

  void stop_agent() {
    if (!agent_) return;
    agent_->signal(SIGTERM);
    agent_->wait();
    agent_.reset();
  }

  std::string agent_log() {
    try {
      return read_file(dir_ + "/agent.log");
    } catch (...) {
      return "";
    }
  }

  HttpResult agent_get(const std::string& path) {
    HttpRequest req;
    req.url = fmt::format("http://127.0.0.1:{}{}", agent_port_, path);
    req.timeout_ms = 5000;
    return http_send(req);
  }

  nlohmann::json jobs() {
    HttpResult r = agent_get("/api/jobs");
    if (r.status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r.body);
  }

  nlohmann::json job_for(const std::string& delivery) {
    for (const auto& j : jobs())
      if (j["delivery_id"] == delivery) return j;
    return nullptr;
  }

  // Waits until the agent's job for `delivery` is in one of `states`.
  nlohmann::json wait_job(const std::string& delivery, std::set<std::string> states,
                          int timeout_s = 240) {
    for (int i = 0; i < timeout_s * 10; ++i) {
      nlohmann::json j = job_for(delivery);
      if (!j.is_null() && states.count(j["state"].get<std::string>())) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "job for " << delivery << " never reached the state; jobs: " << jobs().dump()
                  << "\nagent log:\n"
                  << agent_log();
    return nullptr;
  }

  // A pull_request webhook for PR #2 (or `number`) with head `sha`, signed as GitHub signs it.
  // `base`: the PR's base SHA (default: the fixture's).
  void send_pr(const std::string& delivery, const std::string& action, const std::string& sha,
               int number = 2, const std::string& base = "") {
    auto body = nlohmann::json::parse(fixture("pull_request.synchronize.json"));
    body["action"] = action;
    body["number"] = number;
    body["pull_request"]["number"] = number;
    body["pull_request"]["head"]["sha"] = sha;
    if (!base.empty()) body["pull_request"]["base"]["sha"] = base;
    ASSERT_EQ(send("pull_request", delivery, body.dump()).status, 200) << relay_->log();
  }

  // A dispatch posted straight to the agent, as the relay's webhook transport sends it.
  HttpResult post_dispatch(const nlohmann::json& client_payload,
                           const std::string& secret = kAgentSecret) {
    HttpRequest req;
    req.method = "POST";
    req.url = fmt::format("http://127.0.0.1:{}/dispatch", agent_port_);
    req.body = nlohmann::json{{"event_type", client_payload["event_type"]},
                              {"client_payload", client_payload}}
                   .dump();
    req.headers = {{"X-Ootci-Signature-256", github_signature(secret, req.body)}};
    return http_send(req);
  }

  std::optional<JobRecord> relay_job(const std::string& delivery, int64_t job_id) {
    auto store = open_store(store_uri_);
    return store->jobs.get_job(fmt::format("{}:acme/two:{}:1:ootci-agent", delivery, job_id));
  }

  std::string torch_root_;
  int agent_port_ = 0;
  std::optional<Subprocess> agent_;
};

TEST_P(AgentIntegration, PullRequestBecomesAVerdictOnTheRelayFieldByField) {
  start_relay_to_agent();
  write_backend();
  start_agent();
  send_pr("d-e2e", "opened", kHeadSha);
  nlohmann::json job = wait_job("d-e2e", {"done", "cancelled"});
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["state"], "done");
  EXPECT_EQ(job["conclusion"], "success") << agent_log();
  EXPECT_EQ(job["upstream_sha"], kHeadSha);
  EXPECT_EQ(job["pr_number"], 2);
  EXPECT_EQ(job["error"], "") << agent_log();
  int64_t id = job["id"];

  auto record = relay_job("d-e2e", id);
  ASSERT_TRUE(record) << relay_->log();
  EXPECT_EQ(record->status, JobStatus::kCompleted);
  EXPECT_EQ(record->conclusion.text(), "success");
  EXPECT_EQ(record->repo, "acme/two");
  EXPECT_EQ(record->level, "L2");
  EXPECT_EQ(record->event_type, "pull_request");
  EXPECT_EQ(record->pr_number, 2);
  EXPECT_EQ(record->head_sha, kHeadSha);
  EXPECT_EQ(record->run_id, std::to_string(id));
  EXPECT_EQ(record->run_attempt, 1);
  EXPECT_EQ(record->job_name, "ootci-agent");
  EXPECT_EQ(record->workflow_name, "ootci");
  EXPECT_EQ(record->check_run_id, fmt::format("{}-1", id));
  EXPECT_EQ(record->workflow_url, fmt::format("http://127.0.0.1:{}/jobs/{}", agent_port_, id));
  // No artifact store configured: the callback links the run's report page on the agent.
  EXPECT_EQ(record->artifact_url,
            fmt::format("http://127.0.0.1:{}/jobs/{}/report", agent_port_, id));
  EXPECT_GE(record->queue_time_ms, 0);
  EXPECT_GT(record->execution_time_ms, 1000);  // a real pytest run happened in between
  // test_view_ops on the reference backend: 207 mandatory passes and 53 expected failures.
  EXPECT_EQ(record->tests_total, 260);
  EXPECT_EQ(record->tests_failed, 0);
  EXPECT_EQ(record->tests_skipped, 0);
  EXPECT_EQ(record->tests_passed, 260);
  EXPECT_FALSE(record->in_progress_hash.empty());
  EXPECT_FALSE(record->completed_hash.empty());
  EXPECT_EQ(record->failed_tests_json, "");

  // The run's report page and the device's page, served as pages that load nothing.
  HttpResult report = agent_get(fmt::format("/jobs/{}/report", id));
  EXPECT_EQ(report.status, 200) << report.body;
  EXPECT_EQ(report.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(report.header("Content-Security-Policy").rfind("default-src 'none'", 0), 0u);
  EXPECT_NE(report.body.find("data-count=\"total\">260<"), std::string::npos);
  EXPECT_NE(report.body.find("data-count=\"passed\">207<"), std::string::npos);
  EXPECT_EQ(agent_get("/jobs/999999/report").status, 404);
  HttpResult device = agent_get("/device");
  EXPECT_EQ(device.status, 200) << device.body;
  EXPECT_NE(
      device.body.find("<tr data-file=\"test/test_view_ops.py\"><td>test/test_view_ops.py</td>"),
      std::string::npos)
      << device.body.substr(0, 2000);

  // The same delivery again (a relay retry) is not a second job, and a forged one is refused.
  nlohmann::json cp = {{"event_type", "pull_request"},
                       {"delivery_id", "d-e2e"},
                       {"payload", nlohmann::json::parse(fixture("pull_request.opened.json"))}};
  HttpResult again = post_dispatch(cp);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(nlohmann::json::parse(again.body)["duplicate"], true);
  EXPECT_EQ(post_dispatch(cp, "wrong secret").status, 401);
  EXPECT_EQ(jobs().size(), 1u);
  HttpResult metrics = agent_get("/metrics");
  EXPECT_NE(metrics.body.find("ootci_agent_dispatches_total{result=\"bad_signature\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("ootci_agent_reports_total{status=\"completed\",result=\"ok\"} 1"),
            std::string::npos)
      << metrics.body;
}

TEST_P(AgentIntegration, ARedRunIsAttributedAndItsTriageVerdictReachesTheRelay) {
  start_relay_to_agent();
  // arange switched off breaks exactly one view_ops variant (test_python_types).
  write_backend("attribute: true\n", "{OOTCI_REF_DISABLED_OPS: arange}");
  start_agent();
  send_pr("d-red", "opened", kHeadSha);
  nlohmann::json job = wait_job("d-red", {"done", "cancelled"});
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["conclusion"], "failure") << agent_log();
  auto record = relay_job("d-red", job["id"]);
  ASSERT_TRUE(record) << relay_->log();
  EXPECT_EQ(record->conclusion.text(), "failure");
  EXPECT_EQ(record->tests_failed, 1);
  nlohmann::json triage = nlohmann::json::parse(record->triage_json, nullptr, false);
  ASSERT_TRUE(triage.is_object()) << record->triage_json << "\n" << agent_log();
  EXPECT_EQ(triage["analyzer"], "ootci");
  // The first run of this backend: no green run to compare with, after a flake check that
  // reproduced the failure.
  EXPECT_EQ(triage["category"], "unknown");
  EXPECT_NE(triage["summary"].get<std::string>().find("test_python_types"), std::string::npos)
      << triage.dump();
  EXPECT_EQ(triage["evidence"][1]["kind"], "flake check");
  EXPECT_EQ(triage["evidence"][1]["reproduced"], true);
}

TEST_P(AgentIntegration, AgentKilledWithAQueuedJobRunsItAfterRestart) {
  start_relay_to_agent();
  // The first job blocks in its prepare step, so the second stays queued behind it.
  write_backend("prepare_command: [/bin/sh, -c, 'test \"$OOTCI_PR_NUMBER\" != 2 || sleep 600']\n");
  start_agent();
  send_pr("d-blocker", "opened", kHeadSha, 2);
  ASSERT_FALSE(wait_job("d-blocker", {"running"}).is_null());
  send_pr("d-queued", "opened", "1111111111111111111111111111111111111111", 3);
  ASSERT_EQ(wait_job("d-queued", {"queued"})["state"], "queued");

  kill_agent();     // SIGKILL: no chance to clean up
  write_backend();  // the blocker no longer blocks
  start_agent();
  nlohmann::json queued = wait_job("d-queued", {"done", "cancelled"});
  nlohmann::json blocker = wait_job("d-blocker", {"done", "cancelled"});
  ASSERT_FALSE(queued.is_null());
  EXPECT_EQ(queued["conclusion"], "success") << agent_log();
  EXPECT_EQ(blocker["conclusion"], "success") << agent_log();
  auto record = relay_job("d-queued", queued["id"]);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->status, JobStatus::kCompleted);
  EXPECT_EQ(record->pr_number, 3);
  EXPECT_EQ(record->tests_total, 260);
  // The interrupted job kept its identity: one in_progress (before the kill), one completed.
  auto resumed = relay_job("d-blocker", blocker["id"]);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->status, JobStatus::kCompleted);
  EXPECT_EQ(resumed->conclusion.text(), "success");
}

// An in_progress that failed at the start (no token, the relay down: a transient failure) is
// sent again before completed. Before, the job ran and never reported: the relay refuses a
// completed without its in_progress, so the agent skipped it and the result was lost.
TEST_P(AgentIntegration, AnInProgressThatFailedAtTheStartIsSentBeforeCompleted) {
  start_relay_to_agent();
  // The token source works only once the job's prepare step has run, after the in_progress.
  std::string flag = dir_ + "/token-ok";
  write_backend(fmt::format("prepare_command: [/usr/bin/touch, {}]\n", flag), "{}",
                fmt::format(R"([/bin/sh, -c, 'test -f {} && exec /usr/bin/curl -sf )"
                            R"("{}/token?repository=acme/two"'])",
                            flag, oidc_->issuer()));
  start_agent();
  send_pr("d-late", "opened", kHeadSha);
  nlohmann::json job = wait_job("d-late", {"done", "cancelled"});
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["conclusion"], "success") << agent_log();
  EXPECT_EQ(job["in_progress_reported"], true) << agent_log();
  // The failed first attempt stays on the record.
  EXPECT_NE(job["error"].get<std::string>().find("in_progress report failed"), std::string::npos)
      << job.dump();
  auto record = relay_job("d-late", job["id"]);
  ASSERT_TRUE(record) << agent_log() << relay_->log();
  EXPECT_EQ(record->status, JobStatus::kCompleted);
  EXPECT_EQ(record->conclusion.text(), "success");
  EXPECT_EQ(record->tests_total, 260);
  EXPECT_FALSE(record->in_progress_hash.empty());
  HttpResult metrics = agent_get("/metrics");
  EXPECT_NE(
      metrics.body.find("ootci_agent_reports_total{status=\"in_progress\",result=\"failed\"} 1"),
      std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("ootci_agent_reports_total{status=\"completed\",result=\"ok\"} 1"),
            std::string::npos)
      << metrics.body;
}

TEST_P(AgentIntegration, NewerDispatchForTheSamePrCancelsTheOlderOne) {
  start_relay_to_agent();
  // Only the first head blocks; the newer head runs straight through.
  write_backend(fmt::format(
      "prepare_command: [/bin/sh, -c, 'test \"$OOTCI_UPSTREAM_SHA\" != {} || sleep 600']\n",
      kHeadSha));
  start_agent();
  send_pr("d-old", "opened", kHeadSha);
  ASSERT_FALSE(wait_job("d-old", {"running"}).is_null());
  // A label that builds nothing leaves the running job alone. (CRCR forwards no `labeled`
  // events today; a relay that does must not make them cancel work.)
  nlohmann::json labeled = {
      {"event_type", "pull_request"},
      {"delivery_id", "d-label"},
      {"payload", nlohmann::json::parse(fixture("pull_request.labeled.json"))}};
  HttpResult skipped = post_dispatch(labeled);
  ASSERT_EQ(skipped.status, 202) << skipped.body;
  EXPECT_EQ(nlohmann::json::parse(skipped.body)["should_build"], false);
  EXPECT_EQ(job_for("d-label")["state"], "skipped");
  EXPECT_EQ(job_for("d-old")["state"], "running");

  send_pr("d-new", "synchronize", "2222222222222222222222222222222222222222");
  nlohmann::json old_job = wait_job("d-old", {"done", "cancelled"}, 60);
  EXPECT_EQ(old_job["state"], "cancelled");
  EXPECT_EQ(old_job["conclusion"], "cancelled");
  nlohmann::json new_job = wait_job("d-new", {"done", "cancelled"});
  EXPECT_EQ(new_job["state"], "done");
  EXPECT_EQ(new_job["conclusion"], "success") << agent_log();

  auto old_record = relay_job("d-old", old_job["id"]);
  ASSERT_TRUE(old_record);
  EXPECT_EQ(old_record->status, JobStatus::kCompleted);
  EXPECT_EQ(old_record->conclusion.text(), "cancelled");
  auto new_record = relay_job("d-new", new_job["id"]);
  ASSERT_TRUE(new_record);
  EXPECT_EQ(new_record->conclusion.text(), "success");
  EXPECT_EQ(new_record->head_sha, "2222222222222222222222222222222222222222");
}

INSTANTIATE_TEST_SUITE_P(Sqlite, AgentIntegration, ::testing::Values("sqlite"),
                         [](const auto& info) { return info.param; });

// ---- Issue 41: an open PR's dispatch runs a staged selection of what the PR changes upstream.
// The upstream checkout is a git repo holding test_view_ops.py and a native_functions.yaml whose
// `arange` entry the PR changes; the workspace holds a discovery (written as `ootci discover`
// writes one) in which three variants call arange themselves and two only while generating
// their inputs. So wave 1 is three tests and wave 2 two.

constexpr const char* kViewOps = "test/test_view_ops.py";

std::string view_op(const std::string& name) {
  return fmt::format("{}::TestOldViewOpsPRIVATEUSEONE::{}_privateuseone", kViewOps, name);
}

const std::vector<std::string> kWave1 = {view_op("test_python_types"), view_op("test_T"),
                                         view_op("test_big_transpose")};
const std::vector<std::string> kWave2 = {view_op("test_view"), view_op("test_empty_reshape")};

std::string commit_all(const std::string& repo, const std::string& message) {
  git_output(repo, {"add", "-A"});
  git_output(
      repo, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message});
  std::string sha = git_output(repo, {"rev-parse", "HEAD"});
  return sha.substr(0, sha.find('\n'));
}

class AgentWaves : public AgentIntegration {
 protected:
  // The upstream repo (base and head commits) and the workspace's discovery.
  void make_upstream() {
    upstream_ = dir_ + "/pytorch";
    fs::create_directories(upstream_ + "/test");
    fs::create_directories(upstream_ + "/aten/src/ATen/native");
    for (const char* f : {"test/test_view_ops.py", "test/conftest.py"})
      fs::copy_file(torch_root_ + "/" + f, upstream_ + "/" + f);
    std::string nf = upstream_ + "/aten/src/ATen/native/native_functions.yaml";
    write_file(nf,
               "- func: arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
               "Device? device=None, bool? pin_memory=None) -> Tensor\n");
    git_output(upstream_, {"init", "-q"});
    base_ = commit_all(upstream_, "base");
    std::string text = read_file(nf);
    write_file(nf, text.substr(0, text.size() - 1) + "  # the PR's change\n");
    head_ = commit_all(upstream_, "the PR: arange changes");

    auto store = EvidenceStore::open(dir_ + "/ws/evidence.db");
    RunInfo run;
    run.id = "r-discover";
    run.backend = "reference";
    run.status = RunStatus::kRunning;
    run.started_ms = 1;
    store->begin_run(run);
    std::vector<TestResult> results;
    auto variant = [&](const std::string& id, bool inputs_only) {
      TestResult t;
      t.test_id = id;
      t.file = kViewOps;
      t.cls = "TestOldViewOpsPRIVATEUSEONE";
      t.name = id.substr(id.rfind("::") + 2);
      t.outcome = Outcome::kPassed;
      t.duration_s = 1;
      t.ops = {"aten::arange.start_out", "aten::view"};
      t.op_dtypes = {"aten::arange.start_out:int64", "aten::view:float32"};
      if (inputs_only) t.input_op_dtypes = {"aten::arange.start_out:int64"};
      results.push_back(t);
    };
    for (const auto& id : kWave1) variant(id, false);
    for (const auto& id : kWave2) variant(id, true);
    store->record_batch("r-discover", results);
    store->finish_run("r-discover", 5, RunStatus::kFinished, Conclusion::kSuccess, {});
    store->mark_discovered(
        {kViewOps, sha256_hex(read_file(upstream_ + "/" + kViewOps)), "rev", "r-discover", 2});
  }

  // The PR's dispatch, to its verdict on the relay.
  nlohmann::json run_pr(const std::string& delivery) {
    send_pr(delivery, "opened", head_, 2, base_);
    return wait_job(delivery, {"done", "cancelled"});
  }

  std::string upstream_, base_, head_;
};

TEST_P(AgentWaves, WaveOneGreenAndWaveTwoNeverStarts) {
  start_relay_to_agent();
  make_upstream();
  write_backend("", "{}", "", upstream_);
  start_agent();
  nlohmann::json job = run_pr("d-waves-green");
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["base_sha"], base_);
  EXPECT_EQ(job["conclusion"], "success") << agent_log();
  EXPECT_NE(agent_log().find("staged selection of " + base_ + ".." + head_), std::string::npos)
      << agent_log();
  auto record = relay_job("d-waves-green", job["id"]);
  ASSERT_TRUE(record) << relay_->log();
  EXPECT_EQ(record->conclusion.text(), "success");
  // Wave 1 alone: its three tests, not the file's 260 variants, and none of wave 2's.
  EXPECT_EQ(record->tests_total, 3);
  EXPECT_EQ(record->tests_passed, 3);
  HttpResult report = agent_get(fmt::format("/jobs/{}/report", job["id"].get<int64_t>()));
  EXPECT_EQ(report.status, 200);
  EXPECT_NE(report.body.find("id=\"wave2-why\" data-ran=\"false\">Wave 2 (2 tests) did not run: "
                             "no first-stage test failed other than by a mismatch."),
            std::string::npos)
      << report.body;
  EXPECT_NE(report.body.find("No wave-2 results."), std::string::npos);
}

TEST_P(AgentWaves, WaveOneRaisesSoWaveTwoRunsIntoOneVerdict) {
  start_relay_to_agent();
  make_upstream();
  // arange switched off: test_python_types raises NotImplementedError in wave 1.
  write_backend("attribute: true\n", "{OOTCI_REF_DISABLED_OPS: arange}", "", upstream_);
  start_agent();
  nlohmann::json job = run_pr("d-waves-red");
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["conclusion"], "failure") << agent_log();
  auto record = relay_job("d-waves-red", job["id"]);
  ASSERT_TRUE(record) << relay_->log();
  EXPECT_EQ(record->conclusion.text(), "failure");
  // Both waves in one run, one verdict.
  EXPECT_EQ(record->tests_total, 5) << agent_log();
  EXPECT_GE(record->tests_failed, 1);
  HttpResult report = agent_get(fmt::format("/jobs/{}/report", job["id"].get<int64_t>()));
  EXPECT_NE(report.body.find("id=\"wave2-why\" data-ran=\"true\">Wave 2 (2 tests) ran because "
                             "wave 1 raised: " +
                             std::string(kViewOps) + "::TestOldViewOpsPRIVATEUSEONE::"),
            std::string::npos)
      << report.body;
  for (const auto& id : kWave2)
    EXPECT_NE(report.body.find("<td>" + id + "</td>"), std::string::npos) << id;
  EXPECT_NE(report.body.find("data-wave=\"1\"><td>" + kWave1[0] + "</td>"), std::string::npos);
  nlohmann::json triage = nlohmann::json::parse(record->triage_json, nullptr, false);
  ASSERT_TRUE(triage.is_object()) << record->triage_json << "\n" << agent_log();
  std::string summary = triage["summary"];
  EXPECT_NE(summary.find("Wave 2 (2 tests that reach the change only while generating inputs) "
                         "ran because wave 1 raised (" +
                         std::string(kViewOps) + "::TestOldViewOpsPRIVATEUSEONE::"),
            std::string::npos)
      << triage.dump();
  bool wave2_entry = false;
  for (const auto& e : triage["evidence"])
    if (e["kind"] == "wave 2") {
      wave2_entry = true;
      EXPECT_EQ(e["ran"], true);
      EXPECT_EQ(e["tests"], 2);
    }
  EXPECT_TRUE(wave2_entry) << triage.dump();
}

TEST_P(AgentWaves, TheConfigSwitchRunsThePullRequestsWholePlan) {
  start_relay_to_agent();
  make_upstream();
  write_backend("", "{}", "", upstream_);
  write_file(dir_ + "/ootci.yaml",
             read_file(dir_ + "/ootci.yaml") + "select:\n  pull_requests: full\n");
  start_agent();
  nlohmann::json job = run_pr("d-waves-off");
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["conclusion"], "success") << agent_log();
  EXPECT_EQ(agent_log().find("staged selection of"), std::string::npos) << agent_log();
  auto record = relay_job("d-waves-off", job["id"]);
  ASSERT_TRUE(record) << relay_->log();
  EXPECT_EQ(record->tests_total, 260);
  HttpResult report = agent_get(fmt::format("/jobs/{}/report", job["id"].get<int64_t>()));
  EXPECT_EQ(report.body.find("wave2-why"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, AgentWaves, ::testing::Values("sqlite"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
