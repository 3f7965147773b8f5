#include "relay/callback_body.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(b.run_id, 42);
  EXPECT_EQ(b.run_attempt, 1);
  EXPECT_EQ(b.event_type, "pull_request");
  EXPECT_EQ(b.state_key("a/b"), "d1:a/b:42:1:");
  auto j = minimal();
  j["workflow"]["run_attempt"] = 3;
  j["workflow"]["test_results"] = R"({"passed": 5, "failed": "1", "skipped": 0})";
  EXPECT_EQ(parse(j).run_attempt, 3);
  EXPECT_EQ(parse(j).total, 6);
}

TEST(CallbackBody, TheHashIsOfTheExactBytes) {
  auto hash = [](const char* text) {
    return std::get<CallbackBody>(parse_callback_body(text)).body_hash;
  };
  const char* a =
      R"({"delivery_id":"d1","workflow":{"name":"CI","status":"in_progress","run_id":"1"}})";
  const char* b =
      R"({"delivery_id":"d1","workflow":{"name":"CI","status":"in_progress","run_id":"2"}})";
  EXPECT_EQ(hash(a), hash(a));
  EXPECT_NE(hash(a), hash(b));
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
      "missing required field: workflow.run_id (an integer)");
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
  nlohmann::json v = {{"schema_version", 1}, {"category", "flake"}, {"confidence", "low"}};
  EXPECT_EQ(validate_triage_verdict(v), "");
  v["evidence"] = nlohmann::json::array();
  for (int i = 0; i < 11; ++i) v["evidence"].push_back("e");
  EXPECT_EQ(validate_triage_verdict(v), "evidence must be a list of at most 10 entries");
  v.erase("evidence");
  v["summary"] = std::string(1025, 's');
  EXPECT_EQ(validate_triage_verdict(v), "summary must be a string of at most 1 KB");
  v["summary"] = "ok";
  v["padding"] = std::string(17000, 'p');
  EXPECT_EQ(validate_triage_verdict(v), "larger than 16 KB");
  EXPECT_EQ(validate_triage_verdict({{"schema_version", 2}}), "schema_version must be 1");
}

TEST(CheckRuns, NameExternalIdAndWhoWantsThem) {
  JobRecord j;
  j.key = "d:acme/x:7:1:test";
  j.repo = "acme/x";
  j.workflow_name = "CI";
  j.job_name = "test";
  j.run_id = 7;
  j.pr_number = 12;
  j.head_sha = "abc";
  j.status = "completed";
  j.conclusion = "timed_out";
  j.completed_ms = 0;
  auto t = check_run_task(j, "pytorch/pytorch", 1000);
  auto p = nlohmann::json::parse(t.payload);
  EXPECT_EQ(p["name"], "crcr/acme/x/CI/test");
  EXPECT_EQ(p["external_id"], "7:12");
  EXPECT_EQ(p["output"]["title"], "Timed_out");
  EXPECT_EQ(p["conclusion"], "timed_out");
  EXPECT_EQ(t.ordering_key, "check_run:d:acme/x:7:1:test");
  AllowlistEntry l3{"acme/x", Level::kL3, {}, "dev"};
  AllowlistEntry l4{"acme/y", Level::kL4, {}, ""};
  AllowlistEntry l2{"acme/z", Level::kL2, {}, ""};
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
  j.status = "in_progress";
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
