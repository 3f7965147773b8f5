// The real `ootci relay serve` binary against the GitHub stand-in, on SQLite and PostgreSQL.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "base/time.h"
#include "net/crypto.h"
#include "relay/callback_token.h"
#include "relay_store/store.h"
#include "sql/sql_db.h"
#include "testing/github_standin.h"
#include "testing/relay_fixture.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

const std::vector<std::string> kTargets = {"acme/four", "acme/one", "acme/three", "acme/two"};

class RelayIntegration : public RelayFixture {
 protected:
  // Another connection to the relay's SQLite file, to hold its write lock. It may wait long for
  // it: the relay's threads take the lock one after another while they settle earlier work, and
  // SQLite's busy handler is not fair, so under ASan on a loaded machine a 1 s wait was sometimes
  // not enough to get in (the test then failed in its own setup, "database is locked").
  std::unique_ptr<SqlDb> holder() { return open_sqlite_db(store_uri_.substr(7), 30000); }

  // Runs `f` while the store cannot commit. SQLite: another process holds the write lock past the
  // relay's busy timeout. PostgreSQL: the outbox insert fails as a full disk does (SQLSTATE
  // 53100), after the delivery row was written in the same transaction.
  void while_the_store_refuses_writes(const std::function<void()>& f) {
    if (GetParam() == "sqlite") {
      auto other = holder();
      other->write("hold the write lock", [&](SqlTx&) { f(); });
      return;
    }
    auto db = open_postgres_db(store_uri_, 1, 5000);
    db->write("disk full", [](SqlTx& tx) {
      tx.script(
          "CREATE FUNCTION disk_full() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION "
          "'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$ "
          "LANGUAGE plpgsql; CREATE TRIGGER disk_full BEFORE INSERT ON outbox FOR EACH ROW "
          "EXECUTE FUNCTION disk_full();");
    });
    f();
    db->write("space again", [](SqlTx& tx) {
      tx.script("DROP TRIGGER disk_full ON outbox; DROP FUNCTION disk_full();");
    });
  }
};

TEST_P(RelayIntegration, PullRequestReachesEveryAllowlistedRepoOnceWithTheCrcrPayload) {
  start_relay();
  std::string body = fixture("pull_request.opened.json");
  HttpResult r = send("pull_request", "delivery-1", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto reply = nlohmann::json::parse(r.body);
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(reply["dispatched"].size(), 4u);
  EXPECT_EQ(reply["failed"].size(), 0u);

  auto got = settle(4);
  ASSERT_EQ(got.size(), 4u);
  std::vector<std::string> repos;
  CallbackTokens tokens(CallbackTokens::derive_key(kSecret), 259200);
  for (const auto& d : got) {
    repos.push_back(d.repo);
    EXPECT_EQ(d.event_type, "pull_request");
    const auto& cp = d.client_payload;
    EXPECT_EQ(cp.size(), 4u);  // CRCR's three keys plus callback_token
    EXPECT_EQ(cp["event_type"], "pull_request");
    EXPECT_EQ(cp["delivery_id"], "delivery-1");
    EXPECT_EQ(cp["payload"], nlohmann::json::parse(body));  // verbatim
    auto claims = tokens.verify(cp["callback_token"], now_s());
    ASSERT_TRUE(claims);
    EXPECT_EQ(claims->repo, d.repo);
    EXPECT_EQ(claims->delivery_id, "delivery-1");
    EXPECT_EQ(claims->head_sha, nlohmann::json::parse(body)["pull_request"]["head"]["sha"]);
  }
  std::sort(repos.begin(), repos.end());
  EXPECT_EQ(repos, kTargets);
  // The raw upstream body is embedded byte for byte.
  EXPECT_NE(got[0].raw_body.find(body.substr(0, body.size() - 1)), std::string::npos);
  // Tokens are cached: one mint per repo, not per dispatch (and one for the upstream repo, whose
  // demotion PRs the sweeper looks up).
  int minted = standin_->token_requests();
  EXPECT_LE(minted, 5);
  send("pull_request", "delivery-2", fixture("pull_request.synchronize.json"));
  settle(8);
  EXPECT_EQ(standin_->token_requests(), minted);
}

TEST_P(RelayIntegration, BadSignatureGets401MissingSignature400AndNothingIsStored) {
  start_relay();
  std::string body = fixture("pull_request.opened.json");
  EXPECT_EQ(send("pull_request", "bad-1", body, "wrong secret").status, 401);
  HttpRequest req;
  req.method = "POST";
  req.url = relay_->url() + "/github/webhook";
  req.body = body;
  req.headers = {{"X-GitHub-Event", "pull_request"}, {"X-GitHub-Delivery", "bad-2"}};
  HttpResult missing = http_send(req);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(nlohmann::json::parse(missing.body)["detail"], "No signature");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_TRUE(standin_->dispatches().empty());
  auto store = open_store(store_uri_);
  EXPECT_FALSE(store->outbox.get_delivery("bad-1"));
  EXPECT_FALSE(store->outbox.get_delivery("bad-2"));
}

// A store that cannot commit: the webhook is answered 503 with Retry-After, the delivery is not
// acknowledged, nothing of it is kept, and the relay takes GitHub's redelivery once the store is
// back.
TEST_P(RelayIntegration, AStoreThatRefusesWritesGets503KeepsNothingAndRecovers) {
  start_relay();
  std::string body = fixture("pull_request.opened.json");
  HttpResult refused;
  while_the_store_refuses_writes([&] { refused = send("pull_request", "full-1", body); });
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(
      nlohmann::json::parse(refused.body)["detail"],
      "Store unavailable; the request was not acknowledged, retry it later (a retry is safe)");
  EXPECT_EQ(refused.header("Retry-After"), "5");
  auto store = open_store(store_uri_);
  EXPECT_FALSE(store->outbox.get_delivery("full-1"));
  EXPECT_TRUE(store->outbox.outbox_for("full-1").empty());
  // Recovered by itself: the redelivery is taken and dispatched once to every target.
  HttpResult again = send("pull_request", "full-1", body);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_FALSE(nlohmann::json::parse(again.body).contains("duplicate"));
  EXPECT_EQ(settle(4).size(), 4u);
}

// A store locked by another connection past the relay's 2 s wait: webhooks arriving at once each
// get their 503 with Retry-After within GitHub's 10 s delivery timeout, not one wait after
// another, and none of them is kept. SQLite: another connection holds the write lock. PostgreSQL:
// another connection holds the outbox table against writes (lock_timeout ends the wait).
TEST_P(RelayIntegration, WebhooksWaitingForALockedStoreEachGet503WithinGitHubsTimeout) {
  start_relay();
  std::string body = fixture("pull_request.opened.json");
  std::vector<std::pair<HttpResult, int64_t>> answers(4);
  auto send_all = [&] {
    std::vector<std::thread> senders;
    for (size_t i = 0; i < answers.size(); ++i)
      senders.emplace_back([&, i] {
        int64_t start = now_ms();
        answers[i].first = send("pull_request", fmt::format("locked-{}", i), body);
        answers[i].second = now_ms() - start;
      });
    for (auto& t : senders) t.join();
  };
  if (GetParam() == "sqlite") {
    auto other = holder();
    other->write("hold the write lock", [&](SqlTx&) { send_all(); });
  } else {
    auto other = open_postgres_db(store_uri_, 1, 5000);
    other->write("hold the outbox", [&](SqlTx& tx) {
      tx.exec("LOCK TABLE outbox IN EXCLUSIVE MODE");
      send_all();
    });
  }
  auto store = open_store(store_uri_);
  for (size_t i = 0; i < answers.size(); ++i) {
    const auto& [answer, ms] = answers[i];
    EXPECT_EQ(answer.status, 503) << answer.body;
    EXPECT_EQ(answer.header("Retry-After"), "5");
    EXPECT_LT(ms, 10000) << "answered after GitHub's delivery timeout";
    EXPECT_FALSE(store->outbox.get_delivery(fmt::format("locked-{}", i)));
  }
}

// No webhook lost to a 503: GitHub only lists the delivery the relay refused; the relay finds it
// among the App's hook deliveries once its store is back and asks GitHub to redeliver it, once.
// A delivery listed as failed that the store holds anyway (the answer was lost) is left alone.
TEST_P(RelayIntegration, AWebhookAnswered503IsRedeliveredByTheRelayOnce) {
  start_relay("redelivery: {interval_s: 1}\n");
  standin_->set_app_webhook(relay_->url() + "/github/webhook", kSecret);
  std::string body = fixture("pull_request.opened.json");
  ASSERT_EQ(standin_->deliver_webhook("pull_request", "stored-1", body), 200);
  StandinHookDelivery lost;  // as if the relay had stored it but its answer never arrived
  lost.guid = "stored-1";
  lost.event = "pull_request";
  lost.action = "opened";
  lost.status_code = 502;
  lost.delivered_ms = now_ms();
  standin_->record_hook_delivery(lost);
  settle(4);

  int refused = 0;
  while_the_store_refuses_writes(
      [&] { refused = standin_->deliver_webhook("pull_request", "refused-1", body); });
  ASSERT_EQ(refused, 503);
  // Nobody resends it: the relay asks GitHub, and GitHub's redelivery is dispatched.
  auto got = settle(8, 30000);
  EXPECT_EQ(got.size(), 8u);
  std::map<std::string, int> per_delivery;
  for (const auto& d : got) per_delivery[d.client_payload["delivery_id"]]++;
  EXPECT_EQ(per_delivery, (std::map<std::string, int>{{"refused-1", 4}, {"stored-1", 4}}));
  // Later passes ask for nothing more: the redelivery was answered 200.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(standin_->redelivery_requests(), 1);
  std::vector<std::tuple<std::string, int, bool>> attempts;
  for (const auto& d : standin_->hook_deliveries())
    attempts.emplace_back(d.guid, d.status_code, d.redelivery);
  EXPECT_EQ(attempts, (std::vector<std::tuple<std::string, int, bool>>{{"stored-1", 200, false},
                                                                       {"stored-1", 502, false},
                                                                       {"refused-1", 503, false},
                                                                       {"refused-1", 200, true}}));
  EXPECT_NE(get("/metrics").body.find("ootci_redeliveries_total{outcome=\"requested\"} 1"),
            std::string::npos);
  EXPECT_EQ(standin_->dispatches().size(), 8u);
}

// Found by fuzz/webhook_fuzz.cc: a field of another type than GitHub's ("action": 5) threw
// json's type_error out of the handler, which the server turned into a bare 500.
TEST_P(RelayIntegration, FieldsOfTheWrongTypeReadAsAbsent) {
  start_relay();
  auto body = nlohmann::json::parse(fixture("pull_request.opened.json"));
  body["action"] = 5;
  HttpResult odd = send("pull_request", "odd-1", body.dump());
  EXPECT_EQ(odd.status, 200);
  EXPECT_EQ(nlohmann::json::parse(odd.body)["ignored"], true);
  body["action"] = "labeled";
  body["label"] = {{"name", "ciflow/crcr/npu"}};
  body["pull_request"]["labels"] = {{{"name", 7}}};
  EXPECT_EQ(send("pull_request", "odd-2", body.dump()).status, 200);
  body["action"] = "opened";
  body["pull_request"]["number"] = "12345";
  ASSERT_EQ(send("pull_request", "odd-3", body.dump()).status, 200);
  auto store = open_store(store_uri_);
  EXPECT_FALSE(store->outbox.get_delivery("odd-1"));
  auto d = store->outbox.get_delivery("odd-3");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->pr_number, 0);  // a PR number that is no number is no PR number
}

TEST_P(RelayIntegration, RedeliveryCreatesNoNewDispatch) {
  start_relay();
  std::string body = fixture("pull_request.synchronize.json");
  ASSERT_EQ(send("pull_request", "same-id", body).status, 200);
  HttpResult again = send("pull_request", "same-id", body);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(nlohmann::json::parse(again.body)["duplicate"], true);
  EXPECT_EQ(settle(4).size(), 4u);
}

// Workers share their claims: against targets that take 100 ms, a burst through 8 workers reaches
// every repo exactly once, with fewer claims than rows (one claim feeds the idle workers). Commits
// are shared only when attempts end together (instant targets: bench/relay_throughput), so here
// they are merely counted.
TEST_P(RelayIntegration, ABurstGoesOutOnceEachThroughSharedClaimsAndCommits) {
  standin_->set_profile({100, 0, 0, 0, 1});
  start_relay("  workers: 8\n");
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(send("pull_request", fmt::format("burst-{}", i), fixture("pull_request.opened.json"))
                  .status,
              200);
  auto got = settle(40);
  ASSERT_EQ(got.size(), 40u);
  std::set<std::string> distinct;
  for (const auto& d : got)
    distinct.insert(d.client_payload["delivery_id"].get<std::string>() + ":" + d.repo);
  EXPECT_EQ(distinct.size(), 40u);
  std::string metrics = get("/metrics").body;
  auto counter = [&](const std::string& name) {
    size_t at = metrics.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + name.size() + 2));
  };
  EXPECT_EQ(counter("ootci_dispatches_total{outcome=\"delivered\"}"), 40);
  EXPECT_GE(counter("ootci_dispatch_claims_total"), 1);
  EXPECT_LT(counter("ootci_dispatch_claims_total"), 20) << metrics;
  EXPECT_GE(counter("ootci_dispatch_commits_total"), 1);
  EXPECT_LE(counter("ootci_dispatch_commits_total"), 40);
  for (const auto& o : open_store(store_uri_)->outbox.outbox_for("burst-9"))
    EXPECT_EQ(o.status, OutboxStatus::kDelivered) << o.repo;
}

TEST_P(RelayIntegration, TargetAnswering503TwiceThen204GetsTheDispatchOnce) {
  standin_->queue_faults("acme/two", {{503, -1, 0}, {503, -1, 0}});
  start_relay();
  ASSERT_EQ(send("pull_request", "flaky-1", fixture("pull_request.opened.json")).status, 200);
  settle(4);
  EXPECT_EQ(standin_->dispatches_for("acme/two").size(), 1u);
  EXPECT_EQ(standin_->dispatch_requests("acme/two"), 3);
  auto store = open_store(store_uri_);
  for (const auto& o : store->outbox.outbox_for("flaky-1")) {
    EXPECT_EQ(o.status, OutboxStatus::kDelivered) << o.repo;
    EXPECT_EQ(o.attempts, o.repo == "acme/two" ? 3 : 1) << o.repo;
  }
}

TEST_P(RelayIntegration, RetryAfterIsHonoured) {
  standin_->queue_faults("acme/one", {{429, 2, 0}});
  start_relay();
  int64_t sent = now_ms();
  ASSERT_EQ(send("push", "ra-1", fixture("push.branch_created.json")).status, 200);
  settle(4);
  auto d = standin_->dispatches_for("acme/one");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_GE(d[0].received_ms - sent, 2000);  // backoff alone would be ~50 ms
  EXPECT_EQ(d[0].event_type, "push");
}

TEST_P(RelayIntegration, RelayKilledRightAfterAnswering200DeliversOnRestart) {
  standin_->set_hang_all_ms(3000);  // every attempt of the first relay is still in flight
  start_relay();
  ASSERT_EQ(send("pull_request", "crash-1", fixture("pull_request.opened.json")).status, 200);
  relay_->kill_hard();
  standin_->set_hang_all_ms(0);
  EXPECT_TRUE(standin_->dispatches().empty());
  start_relay();
  auto got = settle(4, 30000);
  EXPECT_EQ(got.size(), 4u);
  std::set<std::string> repos;
  for (const auto& d : got) repos.insert(d.repo);
  EXPECT_EQ(repos.size(), 4u);
}

TEST_P(RelayIntegration, PermanentErrorsAndDeadlinesEndAsFailedWithTheLastError) {
  standin_->uninstall("acme/three");                                         // 404: not retried
  standin_->queue_faults("acme/one", std::vector<Fault>(50, {500, -1, 0}));  // always 500
  start_relay("  max_attempts: 3\n");
  ASSERT_EQ(send("pull_request", "fail-1", fixture("pull_request.opened.json")).status, 200);
  settle(2);
  auto store = open_store(store_uri_);
  for (int i = 0; i < 100; ++i) {
    auto c = store->outbox.outbox_counts();
    if (c.pending == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (const auto& o : store->outbox.outbox_for("fail-1")) {
    if (o.repo == "acme/three") {
      EXPECT_EQ(o.status, OutboxStatus::kFailed);
      EXPECT_EQ(o.attempts, 1);
      EXPECT_NE(o.last_error.find("HTTP 404"), std::string::npos) << o.last_error;
    } else if (o.repo == "acme/one") {
      EXPECT_EQ(o.status, OutboxStatus::kFailed);
      EXPECT_EQ(o.attempts, 3);
      EXPECT_NE(o.last_error.find("max_attempts reached"), std::string::npos) << o.last_error;
      EXPECT_NE(o.last_error.find("HTTP 500"), std::string::npos) << o.last_error;
    } else {
      EXPECT_EQ(o.status, OutboxStatus::kDelivered);
    }
  }
  auto health = nlohmann::json::parse(get("/healthz").body);
  EXPECT_EQ(health["outbox_failed"], 2);
  std::string metrics = get("/metrics").body;
  EXPECT_NE(metrics.find("ootci_dispatches_total{outcome=\"failed\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("ootci_dispatches_total{outcome=\"delivered\"} 2"), std::string::npos);
  EXPECT_NE(metrics.find("ootci_webhook_to_dispatch_seconds_count 2"), std::string::npos);
  EXPECT_NE(metrics.find("ootci_outbox_depth 0"), std::string::npos);
}

TEST_P(RelayIntegration, FiltersEventsReposAndRoutes) {
  start_relay();
  // Not a relayed event: ignored before the signature is even looked at.
  HttpResult issues = send("issues", "x-1", "{}", "wrong");
  EXPECT_EQ(issues.status, 200);
  EXPECT_EQ(nlohmann::json::parse(issues.body)["ignored"], true);
  // Another repository.
  auto other = nlohmann::json::parse(fixture("pull_request.opened.json"));
  other["repository"]["full_name"] = "someone/else";
  EXPECT_EQ(nlohmann::json::parse(send("pull_request", "x-2", other.dump()).body)["ignored"], true);
  // Upstream name compared case-insensitively, as CRCR does; `edited` is not dispatched.
  auto edited = nlohmann::json::parse(fixture("pull_request.opened.json"));
  edited["action"] = "edited";
  edited["repository"]["full_name"] = "codertocat/hello-world";
  EXPECT_EQ(nlohmann::json::parse(send("pull_request", "x-3", edited.dump()).body)["ignored"],
            true);
  EXPECT_EQ(send("pull_request", "x-4", "{not json").status, 400);
  EXPECT_EQ(get("/nowhere").status, 404);
  EXPECT_EQ(get("/github/webhook").status, 405);
  // A ciflow/crcr/<device> label records the L3 wish for that device's repos, without a dispatch.
  auto labeled = nlohmann::json::parse(fixture("pull_request.labeled.json"));
  labeled["label"]["name"] = "ciflow/crcr/acme-dev";
  HttpResult lr = send("pull_request", "x-5", labeled.dump());
  EXPECT_EQ(nlohmann::json::parse(lr.body)["repos"], nlohmann::json::array({"acme/three"}));
  std::string sha = labeled["pull_request"]["head"]["sha"];
  // check_suite rerequested is routed to its handler and acknowledged.
  HttpResult rr = send("check_suite", "x-6", fixture("check_suite.rerequested.json"));
  EXPECT_EQ(rr.status, 200);
  EXPECT_EQ(nlohmann::json::parse(rr.body)["status"], "rerun_queued");
  EXPECT_EQ(nlohmann::json::parse(rr.body)["runs"].size(), 0u);  // no jobs ran on that commit
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(standin_->dispatches().empty());
  auto store = open_store(store_uri_);
  EXPECT_TRUE(store->outbox.check_run_wanted(sha, "acme/three"));
  EXPECT_FALSE(store->outbox.check_run_wanted(sha, "acme/two"));
  // L4 wants check runs on every dispatched PR.
  send("pull_request", "x-7", fixture("pull_request.opened.json"));
  settle(4);
  std::string opened_sha =
      nlohmann::json::parse(fixture("pull_request.opened.json"))["pull_request"]["head"]["sha"];
  EXPECT_TRUE(store->outbox.check_run_wanted(opened_sha, "acme/four"));
}

TEST_P(RelayIntegration, GenericWebhookTransportIsSigned) {
  standin_->add_hook("one", "hook-secret");
  start_relay(
      fmt::format("downstreams:\n  acme/one:\n    transport: webhook\n    url: {}/hooks/one\n"
                  "    secret_env: ACME_ONE_SECRET\n",
                  standin_->url()),
      {{"ACME_ONE_SECRET", "hook-secret"}});
  ASSERT_EQ(send("push", "hook-1", fixture("push.tag_created.json")).status, 200);
  settle(4);
  auto hooks = standin_->dispatches_for("one");
  ASSERT_EQ(hooks.size(), 1u);
  EXPECT_EQ(hooks[0].delivery_header, "hook-1");
  EXPECT_EQ(hooks[0].client_payload["delivery_id"], "hook-1");
  EXPECT_EQ(hooks[0].event_type, "push");
  EXPECT_TRUE(standin_->dispatches_for("acme/one").empty());
}

TEST_P(RelayIntegration, RealCrcrAllowlistAndCrcrTestPayload) {
  // The pytorch/pytorch allowlist and pytorch/crcr-test's own webhook fixture.
  std::string allow = read_file(fixture_path("crcr/allowlist.yml"));
  write_file(dir_ + "/allowlist.yml", allow);
  std::string cfg = config();
  size_t at = cfg.find("Codertocat/Hello-World");
  cfg.replace(at, 22, "pytorch/pytorch");
  relay_ = std::make_unique<RelayProcess>(
      dir_, cfg, port_, std::map<std::string, std::string>{{"TEST_WEBHOOK_SECRET", kSecret}});
  relay_->start();
  auto env =
      nlohmann::json::parse(read_file(fixture_path("crcr/crcr-test/pull_request_opened.json")));
  HttpResult r = send("pull_request", env["delivery_id"], env["payload"].dump());
  ASSERT_EQ(r.status, 200) << r.body;
  auto got = settle(10);
  EXPECT_EQ(got.size(), 10u);
  for (const auto& d : got) {
    EXPECT_EQ(d.client_payload["payload"], env["payload"]);
    EXPECT_EQ(d.client_payload["delivery_id"], env["delivery_id"]);
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, RelayIntegration, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
