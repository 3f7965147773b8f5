#include "relay/callback_body.h"

#include <gtest/gtest.h>

#include <functional>

#include "relay/check_runs.h"
#include "relay/hud_forward.h"

namespace ootci {
namespace {

CallbackBody parse(const nlohmann::json& j) {
  auto r = parse_callback_body(j.dump());
  if (auto* e = std::get_if<std::string>(&r)) ADD_FAILURE() << *e;
  return std::get<CallbackBody>(r);
}

std::string error(const std::string& text) {
  auto r = parse_callback_body(text);
  return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "";
}

nlohmann::json minimal() {
  return {{"delivery_id", "d1"},
          {"workflow", {{"status", "in_progress"}, {"name", "CI"}, {"run_id", "42"}}}};
}

TEST(CallbackBody, ParsesStringIntegersAndDefaults) {
  CallbackBody b = parse(minimal());
  EXPECT_EQ(b.run_id, "42");
  EXPECT_EQ(b.run_attempt, 1);
  EXPECT_EQ(b.event_type, "pull_request");
  EXPECT_EQ(b.state_key("a/b"), "d1:a/b:42:1:");
  auto j = minimal();
  j["workflow"]["run_attempt"] = 3;
  j["workflow"]["test_results"] = R"({"passed": 5, "failed": "1", "skipped": 0})";
  EXPECT_EQ(parse(j).run_attempt, 3);
  EXPECT_EQ(parse(j).total, 6);
}

// A nightly names its commit at the top level (test-infra#8853), before payload.head_sha and the
// delivery id; a pull_request body's top-level field means nothing.
TEST(CallbackBody, ANightlysCommitIsItsTopLevelPytorchHeadSha) {
  auto j = minimal();
  j["event_type"] = "nightly";
  j["workflow"]["status"] = "completed";
  EXPECT_EQ(parse(j).head_sha, "d1");
  j["payload"] = {{"head_sha", "from-payload"}};
  EXPECT_EQ(parse(j).head_sha, "from-payload");
  j["pytorch_head_sha"] = "from-top";
  EXPECT_EQ(parse(j).head_sha, "from-top");
  j["event_type"] = "pull_request";
  j["payload"] = {{"pull_request", {{"number", 5}, {"head", {{"sha", "pr-head"}}}}}};
  EXPECT_EQ(parse(j).head_sha, "pr-head");
}

TEST(CallbackBody, TheHashIsOfTheOutcomeNotOfTheBytes) {
  auto hash = [](const nlohmann::json& j) { return parse(j).outcome_hash; };
  nlohmann::json done = {{"delivery_id", "d1"},
                         {"workflow",
                          {{"status", "completed"},
                           {"conclusion", "failure"},
                           {"name", "CI"},
                           {"run_id", "42"},
                           {"started_at", nullptr},
                           {"completed_at", "2026-12-01T10:00:00Z"},
                           {"test_results", {{"passed", 5}, {"failed", 1}, {"skipped", 0}}}}},
                         {"failed_tests_detail", {{{"name", "t1"}, {"message", "boom at 0x1"}}}}};
  // CRCR's action re-run: the same step with fresh timestamps, and messages that differ.
  nlohmann::json resent = done;
  resent["workflow"]["completed_at"] = "2026-12-01T10:05:00Z";
  resent["failed_tests_detail"][0]["message"] = "boom at 0x2";
  EXPECT_EQ(hash(done), hash(resent));
  for (auto change : std::vector<std::function<void(nlohmann::json&)>>{
           [](auto& j) { j["workflow"]["conclusion"] = "success"; },
           [](auto& j) { j["workflow"]["test_results"]["passed"] = 6; },
           [](auto& j) { j["failed_tests_detail"][0]["name"] = "t2"; },
           [](auto& j) {
             j["failed_tests_detail"].push_back({{"name", "t3"}});
           }}) {
    nlohmann::json other = done;
    change(other);
    EXPECT_NE(hash(done), hash(other)) << other.dump();
  }
  // An in_progress step says nothing but that it started.
  auto a = minimal(), b = minimal();
  b["workflow"]["started_at"] = "2026-12-01T10:00:00Z";
  b["workflow"]["url"] = "https://example.org/run/2";
  EXPECT_EQ(hash(a), hash(b));
  EXPECT_EQ(outcome_hash_of(done.dump()), hash(done));
}

TEST(CallbackBody, RunIdsAreKeptAsGiven) {
  auto j = minimal();
  j["workflow"]["run_id"] = "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11";  // a Buildkite build UUID
  CallbackBody b = parse(j);
  EXPECT_EQ(b.run_id, "0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11");
  EXPECT_EQ(b.state_key("a/b"), "d1:a/b:0190b2f1-5c6e-4c3a-9a53-6f3c1c7e2b11:1:");
  j["workflow"]["run_id"] = 4242;
  EXPECT_EQ(parse(j).run_id, "4242");
  std::string why =
      "missing required field: workflow.run_id (an integer, or an id of at most 64 letters, "
      "digits, '-', '_' or '.' starting with a letter or digit)";
  for (nlohmann::json bad :
       {nlohmann::json(std::string(65, 'a')), nlohmann::json("a:b"), nlohmann::json("a b"),
        nlohmann::json(""), nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json(nullptr)}) {
    j["workflow"]["run_id"] = bad;
    EXPECT_EQ(error(j.dump()), why) << bad.dump();
  }
  j["workflow"]["run_id"] = std::string(64, 'a');
  EXPECT_EQ(parse(j).run_id.size(), 64u);
}

TEST(CallbackBody, RequiredFieldsAreNamed) {
  EXPECT_EQ(error("[1]"), "Invalid JSON");
  EXPECT_EQ(error(R"({"workflow":{}})"), "missing required field: delivery_id");
  EXPECT_EQ(error(R"({"delivery_id":"d"})"), "missing required field: workflow");
  EXPECT_EQ(error(R"({"delivery_id":"d","workflow":{"name":"x","run_id":"1"}})"),
            "missing required field: workflow.status");
  EXPECT_EQ(error(R"({"delivery_id":"d","workflow":{"status":"done","name":"x","run_id":"1"}})"),
            "workflow.status must be in_progress or completed, got 'done'");
  EXPECT_EQ(error(R"({"delivery_id":"d","workflow":{"status":"completed","run_id":"1"}})"),
            "missing required field: workflow.name");
  EXPECT_EQ(
      error(R"({"delivery_id":"d","workflow":{"status":"completed","name":"x","run_id":"-1"}})"),
      "missing required field: workflow.run_id (an integer, or an id of at most 64 letters, "
      "digits, '-', '_' or '.' starting with a letter or digit)");
  EXPECT_EQ(
      error(R"({"delivery_id":"d","workflow":{"status":"completed","name":"x","run_id":"0"}})"),
      "workflow.run_id 0 is reserved for dispatch records");
}

TEST(CallbackBody, TruncatesAtUtf8Boundaries) {
  EXPECT_EQ(truncate_utf8("héllo", 2), "h");  // é is two bytes: never cut in half
  EXPECT_EQ(truncate_utf8("héllo", 3), "hé");
  EXPECT_EQ(truncate_utf8("abc", 10), "abc");
}

TEST(CallbackBody, TriageVerdictRules) {
  std::vector<std::string> notes;
  auto check = [&](nlohmann::json v) { return validate_triage_verdict(v, &notes); };
  nlohmann::json v = {{"schema_version", 1}, {"category", "flake"}, {"confidence", "low"}};
  EXPECT_EQ(check(v), "");
  v["summary"] = 3;
  EXPECT_EQ(check(v), "summary must be a string");
  v["summary"] = "ok";
  v["analyzer"] = {{"name", "ootci"}, {"version", "1"}};  // upstream's form
  EXPECT_EQ(check(v), "");
  v["analyzer"] = 7;
  EXPECT_EQ(check(v), "analyzer must be a string or an object");
  v["analyzer"] = "ootci";
  v["padding"] = std::string(17000, 'p');
  EXPECT_EQ(check(v), "larger than 16 KB");
  EXPECT_EQ(check({{"schema_version", 2}}), "schema_version must be 1");
  EXPECT_TRUE(notes.empty());
}

TEST(CallbackBody, TriageVerdictIsCutToUpstreamCapsNotRejected) {
  nlohmann::json v = {{"schema_version", 1}, {"category", "backend"}, {"confidence", "high"}};
  v["summary"] = std::string(990, 's') + std::string(20, 't');
  for (int i = 0; i < 13; ++i) v["evidence"].push_back({{"i", i}});
  std::vector<std::string> notes;
  EXPECT_EQ(validate_triage_verdict(v, &notes), "");
  EXPECT_EQ(v["summary"].get<std::string>().size(), 1000u);
  EXPECT_EQ(v["evidence"].size(), 10u);
  EXPECT_EQ(v["evidence"][9]["i"], 9);
  EXPECT_EQ(notes, (std::vector<std::string>{"triage_verdict.summary cut to 1000 characters",
                                             "triage_verdict.evidence cut to 10 of 13 entries"}));
  // Over 16 KB only by its summary: cut to fit, not dropped.
  nlohmann::json long_summary = {
      {"schema_version", 1}, {"category", "flake"}, {"confidence", "low"}};
  long_summary["summary"] = std::string(20000, 's');
  EXPECT_EQ(validate_triage_verdict(long_summary, &notes), "");
  EXPECT_EQ(long_summary["summary"].get<std::string>().size(), 1000u);
}

TEST(CallbackBody, TriageVerdictWhereUpstreamPutsItOrAtTheTop) {
  nlohmann::json v = {{"schema_version", "1"}, {"category", "upstream"}, {"confidence", "medium"}};
  auto j = minimal();
  j["workflow"]["status"] = "completed";
  j["workflow"]["triage_verdict"] = v;
  EXPECT_EQ(parse(j).triage["category"], "upstream");
  auto top = minimal();
  top["workflow"]["status"] = "completed";
  top["triage_verdict"] = v;
  EXPECT_EQ(parse(top).triage["category"], "upstream");
  j["triage_verdict"] = {{"schema_version", 1}, {"category", "flake"}, {"confidence", "low"}};
  CallbackBody both = parse(j);
  EXPECT_EQ(both.triage["category"], "upstream");
  EXPECT_EQ(both.notes,
            std::vector<std::string>{
                "top-level triage_verdict ignored: workflow.triage_verdict was sent too"});
}

TEST(CheckRuns, NameExternalIdAndWhoWantsThem) {
  JobRecord j;
  j.key = "d:acme/x:7:1:test";
  j.repo = "acme/x";
  j.workflow_name = "CI";
  j.job_name = "test";
  j.run_id = "7";
  j.pr_number = 12;
  j.head_sha = "abc";
  j.status = JobStatus::kCompleted;
  j.conclusion = JobConclusion::kTimedOut;
  j.completed_ms = 0;
  auto t = check_run_task(j, "pytorch/pytorch", 1000);
  auto p = nlohmann::json::parse(t.payload);
  EXPECT_EQ(p["name"], "crcr/acme/x/CI/test");
  EXPECT_EQ(p["external_id"], "7:12");
  EXPECT_EQ(p["output"]["title"], "Timed_out");
  EXPECT_EQ(p["conclusion"], "timed_out");
  EXPECT_EQ(t.ordering_key, "check_run:d:acme/x:7:1:test");
  AllowlistEntry l3{"acme/x", Level::kL3, {}, "dev", {}};
  AllowlistEntry l4{"acme/y", Level::kL4, {}, "", {}};
  AllowlistEntry l2{"acme/z", Level::kL2, {}, "", {}};
  nlohmann::json labelled = {{"pull_request", {{"labels", {{{"name", "ciflow/crcr/dev"}}}}}}};
  EXPECT_TRUE(wants_check_run(l4, {}, false));
  EXPECT_FALSE(wants_check_run(l3, {}, false));
  EXPECT_TRUE(wants_check_run(l3, {}, true));
  EXPECT_TRUE(wants_check_run(l3, labelled, false));
  EXPECT_FALSE(wants_check_run(l2, labelled, true));
}

TEST(HudForward, EnvelopeSplitsTrustedFromUntrusted) {
  JobRecord j;
  j.repo = "acme/x";
  j.level = "L3";
  j.status = JobStatus::kInProgress;
  j.queue_time_ms = 12345;
  j.execution_time_ms = -1;
  auto e = hud_envelope(j, {{"a", 1}});
  EXPECT_EQ(e["trusted"]["verified_repo"], "acme/x");
  EXPECT_DOUBLE_EQ(e["trusted"]["ci_metrics"]["queue_time"].get<double>(), 12.345);
  EXPECT_TRUE(e["trusted"]["ci_metrics"]["execution_time"].is_null());
  EXPECT_EQ(e["untrusted"]["callback_payload"]["a"], 1);
}

}  // namespace
}  // namespace ootci
