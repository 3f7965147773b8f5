#include "job/agent_dispatch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "net/crypto.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;

const std::string kSecret = "agent-secret";

std::optional<std::string> no_head(const std::string&, const std::string&) {
  return std::nullopt;
}

// The agent's answer to `body`, signed with its secret unless `signature` is given.
AgentDispatch dispatch(const std::string& body, std::optional<std::string> signature = {}) {
  GatePolicy policy;
  policy.base_branches = {"master"};  // the fixtures' PRs target master
  return parse_agent_dispatch(kSecret, signature ? *signature : github_signature(kSecret, body),
                              body, policy, "npu", no_head);
}

// What the relay's generic-webhook transport posts: build_client_payload's client_payload (the
// webhook verbatim, plus the callback token) inside {"event_type", "client_payload"}.
std::string relay_body(const std::string& event_type, const std::string& delivery_id,
                       const std::string& raw_webhook) {
  std::string client_payload = R"({"event_type":)" + json(event_type).dump() +
                               R"(,"delivery_id":)" + json(delivery_id).dump() + R"(,"payload":)" +
                               raw_webhook + R"(,"callback_token":"t0k")" + "}";
  return R"({"event_type":)" + json(event_type).dump() + R"(,"client_payload":)" + client_payload +
         "}";
}

TEST(AgentDispatch, TheRelaysBodyBecomesAJobWithTheGatesDecision) {
  std::string raw = read_file(fixture_path("github-webhooks/pull_request.opened.json"));
  AgentDispatch d = dispatch(relay_body("pull_request", "d-1", raw));
  ASSERT_TRUE(d.ok()) << d.detail;
  GatePolicy policy;
  policy.base_branches = {"master"};
  json payload = json::parse(relay_body("pull_request", "d-1", raw))["client_payload"];
  GateDecision gate = decide_gate(policy, "npu", payload, no_head);
  EXPECT_TRUE(gate.should_build);
  EXPECT_EQ(d.gate.reason, gate.reason);
  EXPECT_EQ(d.job.delivery_id, "d-1");
  EXPECT_EQ(d.job.event_type, "pull_request");
  EXPECT_EQ(json::parse(d.job.client_payload), payload);
  EXPECT_EQ(d.job.should_build, true);
  EXPECT_EQ(d.job.state, JobState::kQueued);
  EXPECT_EQ(d.job.upstream_sha, gate.upstream_sha);
  EXPECT_EQ(d.job.pr_number, 2);
  EXPECT_EQ(d.job.supersede_key, gate.supersede_key);
  EXPECT_EQ(d.job.received_ms, 0);  // the handler's to set

  // A dispatch the gate turns down is still a job, skipped; without a top-level event_type the
  // gate's event names it.
  raw = read_file(fixture_path("github-webhooks/pull_request.labeled.json"));
  json body = json::parse(relay_body("pull_request", "d-2", raw));
  body.erase("event_type");
  d = dispatch(body.dump());
  ASSERT_TRUE(d.ok()) << d.detail;
  EXPECT_FALSE(d.job.should_build);
  EXPECT_EQ(d.job.state, JobState::kSkipped);
  EXPECT_EQ(d.job.event_type, "pull_request");
}

TEST(AgentDispatch, RefusalsNameTheField) {
  std::string good = relay_body("push", "d-3", "{}");
  EXPECT_EQ(dispatch(good, "").status, 401);
  EXPECT_EQ(dispatch(good, "sha256=00").detail, "invalid X-Ootci-Signature-256");
  EXPECT_EQ(dispatch(good, github_signature("other", good)).status, 401);
  auto refusal = [](const std::string& body) {
    AgentDispatch d = dispatch(body);
    EXPECT_EQ(d.status, 400) << body;
    return d.detail;
  };
  EXPECT_EQ(refusal("not json"), "body is not a JSON object");
  EXPECT_EQ(refusal("[]"), "body is not a JSON object");
  EXPECT_EQ(refusal("{}"), "client_payload: missing or not an object");
  EXPECT_EQ(refusal(R"({"client_payload": "x"})"), "client_payload: missing or not an object");
  EXPECT_EQ(refusal(R"({"client_payload": {"delivery_id": 7}})"),
            "client_payload.delivery_id: missing or not a string");
  // The gate's own errors name the JSON path.
  EXPECT_NE(refusal(R"({"client_payload": {"delivery_id": "d"}})"), "");
}

// Found while writing fuzz/agent_dispatch_fuzz.cc, and reproduced with it: a top-level
// event_type that is no string (here 5, in the relay's body of a crcr-test fixture) threw json's
// type_error out of body.value(), and the handler answered a bare 500.
TEST(AgentDispatch, AnEventTypeThatIsNoStringIsRefused) {
  std::string body =
      read_file(source_dir() + "/fuzz/seeds/agent_dispatch/found-event-type-number.json");
  AgentDispatch d;
  EXPECT_NO_THROW(d = dispatch(body));
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.detail, "event_type: not a string");
  for (const char* odd : {"null", "[]", "{}", "true"}) {
    json j = json::parse(body);
    j["event_type"] = json::parse(odd);
    EXPECT_EQ(dispatch(j.dump()).detail, "event_type: not a string") << odd;
  }
}

// Found while writing fuzz/agent_dispatch_fuzz.cc, and reproduced with it (ASan: stack-overflow
// in json's serializer): a signed body nested a million levels deep (2 MB; the agent takes
// 25 MB) passed the gate, and json::dump, storing the client_payload, overflowed the stack and
// took the agent down.
TEST(AgentDispatch, DeepNestingIsRefusedBeforeParsing) {
  auto nested = [](size_t depth) {
    return relay_body("push", "d-deep",
                      R"({"ref": "refs/heads/main", "after": ")" + std::string(40, 'd') +
                          R"(", "repository": {"full_name": "pytorch/pytorch"}, "deep": )" +
                          std::string(depth, '[') + std::string(depth, ']') + "}");
  };
  AgentDispatch d;
  EXPECT_NO_THROW(d = dispatch(nested(1000000)));
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.detail, "body: nested deeper than 128 levels");
  // The body, client_payload and payload are three levels: 125 lists make 128, accepted.
  EXPECT_TRUE(dispatch(nested(125)).ok()) << dispatch(nested(125)).detail;
  EXPECT_EQ(dispatch(nested(126)).detail, "body: nested deeper than 128 levels");
  // Brackets inside strings are text, not nesting.
  json body = json::parse(nested(1));
  body["client_payload"]["payload"]["title"] = std::string(1000, '[') + "\\\"" + "{{{";
  EXPECT_TRUE(dispatch(body.dump()).ok());
}

}  // namespace
}  // namespace ootci
