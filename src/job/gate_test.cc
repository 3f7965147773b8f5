#include "job/gate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;

// Hello-World PR #2 (octokit examples) and ailisp PR #3 (a real delivery), both onto master.
const std::string kHelloHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string kForkHead = "7b5a809ab03679215c55926f7d111156ec98b865";
const std::string kMergeCommit = "a21683865c088b5fe1906cf6552d15a285a4986d";
const std::string kTagAfter = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";
const std::string kBaseHead = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
const std::string kHello = "Codertocat/Hello-World";
const std::string kAilisp = "ailisp/gcbapp-buildconfig-example";

json webhook(const std::string& fixture) {
  return json::parse(read_file(fixture_path("github-webhooks/" + fixture)));
}

// What CRCR sends: the upstream webhook verbatim inside client_payload.
json client_payload(const std::string& event_type, json payload) {
  return {{"event_type", event_type},
          {"delivery_id", "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
          {"payload", std::move(payload)}};
}

void add_label(json& payload, const std::string& name) {
  payload["pull_request"]["labels"].push_back({{"name", name}});
}

// The fixtures' PRs target master.
GatePolicy master_policy() {
  GatePolicy p;
  p.base_branches = {"master"};
  return p;
}

// A branch head lookup that records its calls; `head` nullopt makes it fail.
struct FakeHeads {
  std::optional<std::string> head = kBaseHead;
  std::vector<std::string> calls;
  BranchHeadResolver resolver() {
    return [this](const std::string& repo, const std::string& branch) {
      calls.push_back(repo + " " + branch);
      return head;
    };
  }
};

struct Case {
  std::string name;
  std::string fixture;
  std::string event_type;
  std::function<void(json&)> edit_payload;
  std::function<void(GatePolicy&)> edit_policy;
  bool should_build;
  std::string upstream_sha;
  std::string reason;
  bool landed = false;
  std::vector<std::string> resolver_calls = {};
};

const std::vector<Case>& cases() {
  auto none = [](auto&) {};
  static const std::vector<Case> all = {
      {"OpenedBuildsTheHead", "pull_request.opened.json", "pull_request", none, none, true,
       kHelloHead, "PR #2 opened on master: builds the PR head " + kHelloHead},
      {"OpenedDoesNotBuildWhenMergedIsRequired", "pull_request.opened.json", "pull_request", none,
       [](GatePolicy& p) { p.require_merged = true; }, false, "",
       "not merged: policy requires a landed PR (PR #2 opened)"},
      {"ForkSynchronizeBuildsTheForksHead", "pull_request.synchronize.fork.json", "pull_request",
       none, none, true, "7d1b24db3fde2747f9dadfb0f8abf0c8e6f40cad",
       "PR #2 synchronize on master: builds the PR head 7d1b24db3fde2747f9dadfb0f8abf0c8e6f40cad"},
      {"ClosedWithoutMergeDoesNotBuild", "pull_request.closed.unmerged.json", "pull_request", none,
       none, false, "", "PR #2 closed without merge (merged is false and no Merged label)"},
      {"MergedThroughTheLabelBuildsTheBaseHead",
       "pull_request.closed.unmerged.json",
       "pull_request",
       [](json& p) { add_label(p, "Merged"); },
       [](GatePolicy& p) { p.require_merged = true; },
       true,
       kBaseHead,
       "PR #2 landed on master (Merged label): builds the head of master, " + kBaseHead,
       true,
       {kHello + " master"}},
      {"MergedTrueBuildsTheBaseHead",
       "pull_request.closed.merged.json",
       "pull_request",
       none,
       none,
       true,
       kBaseHead,
       "PR #3 landed on master (merged): builds the head of master, " + kBaseHead,
       true,
       {kAilisp + " master"}},
      {"AnotherMergedLabelName", "pull_request.closed.unmerged.json", "pull_request",
       [](json& p) { add_label(p, "Merged"); }, [](GatePolicy& p) { p.merged_label = "landed"; },
       false, "", "PR #2 closed without merge (merged is false and no landed label)"},
      {"MergedToAnotherBaseDoesNotBuild", "pull_request.closed.merged.json", "pull_request", none,
       [](GatePolicy& p) { p.base_branches = {"main"}; }, false, "",
       "PR #3 targets master, not one of the base branches main", true},
      {"ReleasePinAddsItsReleaseBranch",
       "pull_request.closed.unmerged.json",
       "pull_request",
       [](json& p) {
         add_label(p, "Merged");
         p["pull_request"]["base"]["ref"] = "release/2.14";
       },
       [](GatePolicy& p) {
         p.base_branches = {"main"};
         p.release_pin = "torch~=2.14.0";
       },
       true,
       kBaseHead,
       "PR #2 landed on release/2.14 (Merged label): builds the head of release/2.14, " + kBaseHead,
       true,
       {kHello + " release/2.14"}},
      {"OtherReleaseBranchesDoNotBuild", "pull_request.closed.unmerged.json", "pull_request",
       [](json& p) {
         add_label(p, "Merged");
         p["pull_request"]["base"]["ref"] = "release/2.13";
       },
       [](GatePolicy& p) {
         p.base_branches = {"main"};
         p.release_pin = "torch~=2.14.0";
       },
       false, "", "PR #2 targets release/2.13, not one of the base branches main, release/2.14",
       true},
      {"BaseGlobMatchesOneSegment", "pull_request.opened.json", "pull_request",
       [](json& p) { p["pull_request"]["base"]["ref"] = "release/2.14"; },
       [](GatePolicy& p) { p.base_branches = {"release/*"}; }, true, kHelloHead,
       "PR #2 opened on release/2.14: builds the PR head " + kHelloHead},
      {"BaseGlobStopsAtASlash", "pull_request.opened.json", "pull_request",
       [](json& p) { p["pull_request"]["base"]["ref"] = "release/2.14/fix"; },
       [](GatePolicy& p) { p.base_branches = {"release/*"}; }, false, "",
       "PR #2 targets release/2.14/fix, not one of the base branches release/*"},
      {"LabelsRequirementWithoutTheLabel", "pull_request.opened.json", "pull_request", none,
       [](GatePolicy& p) {
         p.labels = {"ciflow/crcr/{device}", "ciflow/all"};
       },
       false, "", "PR #2 carries none of the labels ciflow/crcr/spyre, ciflow/all"},
      {"LabelsRequirementWithTheDevicesLabel", "pull_request.opened.json", "pull_request",
       [](json& p) { add_label(p, "ciflow/crcr/spyre"); },
       [](GatePolicy& p) { p.labels = {"ciflow/crcr/{device}"}; }, true, kHelloHead,
       "PR #2 opened on master: builds the PR head " + kHelloHead},
      {"LabeledDoesNotBuildByDefault", "pull_request.labeled.json", "pull_request", none, none,
       false, "",
       "action labeled does not build (gate.pull_request.actions: opened, synchronize, "
       "reopened, closed)"},
      {"LabeledWithTheLabelJustAdded", "pull_request.labeled.json", "pull_request",
       [](json& p) { p["label"]["name"] = "ciflow/crcr/spyre"; },
       [](GatePolicy& p) {
         p.pr_actions.push_back("labeled");
         p.labels = {"ciflow/crcr/{device}"};
       },
       true, kHelloHead, "PR #2 labeled on master: builds the PR head " + kHelloHead},
      {"UnlabeledDoesNotCountTheRemovedLabel", "pull_request.labeled.json", "pull_request",
       [](json& p) {
         p["action"] = "unlabeled";
         p["label"]["name"] = "ciflow/crcr/spyre";
       },
       [](GatePolicy& p) {
         p.pr_actions.push_back("unlabeled");
         p.labels = {"ciflow/crcr/{device}"};
       },
       false, "", "PR #2 carries none of the labels ciflow/crcr/spyre"},
      {"LandedShaMergeCommit", "pull_request.closed.merged.json", "pull_request", none,
       [](GatePolicy& p) { p.landed_sha = "merge_commit"; }, true, kMergeCommit,
       "PR #3 landed on master (merged): builds merge_commit_sha " + kMergeCommit, true},
      {"LandedShaMergeCommitFallsBackToTheBaseHead",
       "pull_request.closed.merged.json",
       "pull_request",
       [](json& p) { p["pull_request"]["merge_commit_sha"] = nullptr; },
       [](GatePolicy& p) { p.landed_sha = "merge_commit"; },
       true,
       kBaseHead,
       "PR #3 landed on master (merged): merge_commit_sha is empty, so builds the head of "
       "master, " +
           kBaseHead,
       true,
       {kAilisp + " master"}},
      {"LandedShaHead", "pull_request.closed.merged.json", "pull_request", none,
       [](GatePolicy& p) { p.landed_sha = "head"; }, true, kForkHead,
       "PR #3 landed on master (merged): builds the PR head " + kForkHead, true},
      {"PushToATrunkTagBuildsAfter", "push.tag_created.json", "push",
       [](json& p) { p["ref"] = "refs/tags/ciflow/trunk/123"; },
       [](GatePolicy& p) { p.push_refs = {"refs/tags/ciflow/trunk/*"}; }, true, kTagAfter,
       "push to refs/tags/ciflow/trunk/123: builds " + kTagAfter},
      {"PushToAnotherRefDoesNotBuild", "push.branch.json", "push", none,
       [](GatePolicy& p) { p.push_refs = {"refs/tags/ciflow/trunk/*"}; }, false, "",
       "push to refs/heads/master matches none of gate.push.refs (refs/tags/ciflow/trunk/*)"},
      {"PushesDoNotBuildByDefault", "push.tag_created.json", "push", none, none, false, "",
       "push to refs/tags/simple-tag: pushes do not build (gate.push.refs is empty)"},
      {"DeletedPushDoesNotBuild", "push.tag_deleted.json", "push",
       [](json& p) { p["ref"] = "refs/tags/ciflow/trunk/123"; },
       [](GatePolicy& p) { p.push_refs = {"refs/tags/ciflow/trunk/*"}; }, false, "",
       "push deleted refs/tags/ciflow/trunk/123"},
      {"OtherEventTypesDoNotBuild", "check_run.rerequested.json", "check_run", none, none, false,
       "", "event type check_run does not build"},
  };
  return all;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class GateCase : public testing::TestWithParam<Case> {};

TEST_P(GateCase, Decides) {
  const Case& c = GetParam();
  json payload = webhook(c.fixture);
  c.edit_payload(payload);
  GatePolicy policy = master_policy();
  c.edit_policy(policy);
  FakeHeads heads;
  GateDecision d =
      decide_gate(policy, "spyre", client_payload(c.event_type, payload), heads.resolver());
  EXPECT_EQ(d.should_build, c.should_build);
  EXPECT_EQ(d.upstream_sha, c.upstream_sha);
  EXPECT_EQ(d.reason, c.reason);
  EXPECT_EQ(d.landed, c.landed);
  EXPECT_EQ(heads.calls, c.resolver_calls);
  EXPECT_EQ(d.event, c.event_type);
  if (c.event_type == "pull_request") {
    EXPECT_EQ(d.action, payload["action"]);
    EXPECT_EQ(d.pr_number, payload["pull_request"]["number"]);
    EXPECT_EQ(d.supersede_key,
              fmt::format("{}#{}", payload["repository"]["full_name"].get<std::string>(),
                          payload["pull_request"]["number"].get<int>()));
  } else {
    EXPECT_EQ(d.action, "");
    EXPECT_EQ(d.pr_number, 0);
  }
  if (c.event_type == "push") {
    EXPECT_EQ(d.supersede_key, payload["repository"]["full_name"].get<std::string>() + "@" +
                                   payload["ref"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GateCase, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(Gate, AnOpenPrCarriesItsBaseShaForTheSelectionAndALandedOneDoesNot) {
  FakeHeads heads;
  GateDecision open = decide_gate(
      master_policy(), "privateuseone",
      client_payload("pull_request", webhook("pull_request.opened.json")), heads.resolver());
  EXPECT_EQ(open.base_sha, "f95f852bd8fca8fcc58a9a2d6c842781e32a215e");
  // Without a base SHA the PR still builds; it runs the full plan.
  json no_base = webhook("pull_request.opened.json");
  no_base["pull_request"]["base"].erase("sha");
  GateDecision bare = decide_gate(master_policy(), "privateuseone",
                                  client_payload("pull_request", no_base), heads.resolver());
  EXPECT_TRUE(bare.should_build);
  EXPECT_EQ(bare.base_sha, "");
  json landed = webhook("pull_request.opened.json");
  landed["action"] = "closed";
  landed["pull_request"]["merged"] = true;
  GateDecision merged = decide_gate(master_policy(), "privateuseone",
                                    client_payload("pull_request", landed), heads.resolver());
  EXPECT_TRUE(merged.landed);
  EXPECT_EQ(merged.base_sha, "");
}

TEST(Gate, SupersedeKeysForAPrAndAPush) {
  GatePolicy policy = master_policy();
  FakeHeads heads;
  GateDecision pr = decide_gate(
      policy, "spyre", client_payload("pull_request", webhook("pull_request.closed.merged.json")),
      heads.resolver());
  EXPECT_EQ(pr.supersede_key, kAilisp + "#3");
  json push = webhook("push.tag_created.json");
  push["ref"] = "refs/tags/ciflow/trunk/123";
  GateDecision p = decide_gate(policy, "spyre", client_payload("push", push), heads.resolver());
  EXPECT_EQ(p.supersede_key, kHello + "@refs/tags/ciflow/trunk/123");
}

TEST(Gate, EventTypeFallsBackToThePayloadsShape) {
  GatePolicy policy = master_policy();
  policy.push_refs = {"refs/heads/*"};
  FakeHeads heads;
  json pr = client_payload("", webhook("pull_request.opened.json"));
  pr.erase("event_type");
  GateDecision d = decide_gate(policy, "spyre", pr, heads.resolver());
  EXPECT_EQ(d.event, "pull_request");
  EXPECT_TRUE(d.should_build);
  json push = client_payload("", webhook("push.branch.json"));
  push.erase("event_type");
  d = decide_gate(policy, "spyre", push, heads.resolver());
  EXPECT_EQ(d.event, "push");
  EXPECT_EQ(d.upstream_sha, "1496a1f82f32f240f7cbe1a42eb0b0c7a06a5093");
}

TEST(Gate, UnresolvableBaseHeadDoesNotBuild) {
  FakeHeads heads;
  heads.head = std::nullopt;
  GateDecision d = decide_gate(
      master_policy(), "spyre",
      client_payload("pull_request", webhook("pull_request.closed.merged.json")), heads.resolver());
  EXPECT_FALSE(d.should_build);
  EXPECT_TRUE(d.landed);
  EXPECT_EQ(d.upstream_sha, "");
  EXPECT_EQ(d.reason, "PR #3 landed on master (merged), but the head of master in " + kAilisp +
                          " could not be resolved: base_head_command failed");
}

TEST(Gate, AResolverThatThrowsDoesNotBuild) {
  BranchHeadResolver throwing = [](const std::string&,
                                   const std::string&) -> std::optional<std::string> {
    throw Error("ls-remote: network unreachable");
  };
  GateDecision d = decide_gate(
      master_policy(), "spyre",
      client_payload("pull_request", webhook("pull_request.closed.merged.json")), throwing);
  EXPECT_FALSE(d.should_build);
  EXPECT_EQ(d.reason, "PR #3 landed on master (merged), but the head of master in " + kAilisp +
                          " could not be resolved: ls-remote: network unreachable");
}

// Each edit breaks the opened PR in one way; the error names the JSON path.
TEST(Gate, MalformedPayloadsNameTheJsonPath) {
  struct Broken {
    std::function<void(json&)> edit;
    std::string error;
  };
  std::vector<Broken> broken = {
      {[](json& c) { c["payload"]["pull_request"]["base"].erase("ref"); },
       "client_payload.payload.pull_request.base.ref: missing"},
      {[](json& c) { c["payload"]["pull_request"].erase("base"); },
       "client_payload.payload.pull_request.base: missing"},
      {[](json& c) { c["payload"]["pull_request"]["number"] = "2"; },
       "client_payload.payload.pull_request.number: expected an integer, not string"},
      {[](json& c) { c["payload"]["pull_request"]["head"]["sha"] = nullptr; },
       "client_payload.payload.pull_request.head.sha: expected a string, not null"},
      {[](json& c) { c["payload"]["pull_request"]["labels"] = "bug"; },
       "client_payload.payload.pull_request.labels: expected a list, not string"},
      {[](json& c) { c["payload"]["pull_request"]["labels"][0].erase("name"); },
       "client_payload.payload.pull_request.labels[0].name: missing"},
      {[](json& c) { c["payload"]["pull_request"]["merged"] = "no"; },
       "client_payload.payload.pull_request.merged: expected true or false, not string"},
      {[](json& c) { c["payload"].erase("repository"); },
       "client_payload.payload.repository: missing"},
      {[](json& c) { c["payload"]["action"] = 1; },
       "client_payload.payload.action: expected a string, not number"},
      {[](json& c) { c.erase("payload"); }, "client_payload.payload: missing"},
      {[](json& c) { c["payload"] = json::array(); },
       "client_payload.payload: expected an object, not array"},
      {[](json& c) { c["event_type"] = 7; },
       "client_payload.event_type: expected a string, not number"},
      {[](json& c) {
         c.erase("event_type");
         c["payload"] = {{"zen", "Keep it logically awesome."}};
       },
       "client_payload.event_type: missing, and client_payload.payload is neither a "
       "pull_request nor a push webhook"},
      {[](json& c) { c = json::array(); }, "client_payload: expected an object, not array"},
  };
  FakeHeads heads;
  for (const auto& b : broken) {
    json c = client_payload("pull_request", webhook("pull_request.opened.json"));
    b.edit(c);
    try {
      decide_gate(master_policy(), "spyre", c, heads.resolver());
      ADD_FAILURE() << "no error, expected: " << b.error;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), b.error);
    }
  }
}

TEST(Gate, MalformedPushNamesTheJsonPath) {
  GatePolicy policy = master_policy();
  policy.push_refs = {"refs/tags/*"};
  json c = client_payload("push", webhook("push.tag_created.json"));
  c["payload"].erase("after");
  FakeHeads heads;
  try {
    decide_gate(policy, "spyre", c, heads.resolver());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "client_payload.payload.after: missing");
  }
}

const std::string kSha40 = "0123456789abcdef0123456789abcdef01234567";

TEST(GateCommands, BranchHeadResolverRunsTheCommandWithRepoAndBranch) {
  GatePolicy policy;
  // The command checks its own arguments, so a wrong expansion fails it.
  policy.base_head_command = {"/bin/sh",
                              "-c",
                              "test \"$1\" = pytorch/pytorch && test \"$2\" = release/2.14 && "
                              "echo 'warning: not a sha deadbeef' && echo \"" +
                                  kSha40 + "\trefs/heads/$2\"",
                              "sh",
                              "{repo}",
                              "{branch}"};
  BranchHeadResolver resolve = command_branch_head_resolver(policy);
  EXPECT_EQ(resolve("pytorch/pytorch", "release/2.14"), kSha40);
  EXPECT_EQ(resolve("pytorch/pytorch", "main"), std::nullopt);  // the test fails: exit 1
}

TEST(GateCommands, BranchHeadResolverExpandsWithinAnArgument) {
  GatePolicy policy;
  policy.base_head_command = {"/bin/echo", kSha40 + " refs/heads/{branch} of {repo}"};
  EXPECT_EQ(command_branch_head_resolver(policy)("pytorch/pytorch", "main"), kSha40);
}

TEST(GateCommands, BranchHeadResolverFailures) {
  GatePolicy policy;
  policy.base_head_command = {"/bin/echo", "no sha here"};
  EXPECT_EQ(command_branch_head_resolver(policy)("pytorch/pytorch", "main"), std::nullopt);
  policy.base_head_command = {"/nonexistent/git"};
  EXPECT_EQ(command_branch_head_resolver(policy)("pytorch/pytorch", "main"), std::nullopt);
  policy.base_head_command = {"/bin/false"};
  EXPECT_EQ(command_branch_head_resolver(policy)("pytorch/pytorch", "main"), std::nullopt);
}

TEST(GateCommands, NightlyExtractsTheShaFromTheCommandsOutput) {
  GatePolicy policy;
  policy.nightly_command = {"/bin/echo", "2026-01-01 nightly release (" + kSha40 + ")"};
  GateDecision d = decide_nightly(policy);
  EXPECT_TRUE(d.should_build);
  EXPECT_EQ(d.upstream_sha, kSha40);
  EXPECT_EQ(d.event, "nightly");
  EXPECT_EQ(d.supersede_key, "nightly");
  EXPECT_EQ(d.pr_number, 0);
  EXPECT_EQ(d.reason, "nightly: builds " + kSha40 + " from /bin/echo");

  policy.nightly_sha_pattern = "source=([0-9a-f]+)";
  policy.nightly_command = {"/bin/echo", "source=abc123"};
  EXPECT_EQ(decide_nightly(policy).upstream_sha, "abc123");
}

TEST(GateCommands, NightlyErrors) {
  GatePolicy policy;
  EXPECT_THROW(
      {
        try {
          decide_nightly(policy);
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()), "gate.nightly.command is not set in ootci.yaml");
          throw;
        }
      },
      Error);
  policy.nightly_command = {"/bin/echo", "Nightly build without a sha"};
  try {
    decide_nightly(policy);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gate.nightly.sha_pattern \\(([0-9a-f]{40})\\) found no SHA in the output of "
              "/bin/echo Nightly build without a sha: Nightly build without a sha");
  }
  policy.nightly_command = {"/bin/sh", "-c", "echo 'curl: (6) no host' >&2; exit 6"};
  try {
    decide_nightly(policy);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gate.nightly.command failed: /bin/sh -c echo 'curl: (6) no host' >&2; exit 6: "
              "exited with 6: curl: (6) no host");
  }
}

TEST(GateOutputs, OneKeyValueLineEachInOrder) {
  GateDecision d;
  d.should_build = true;
  d.reason = "PR #2 landed\non master";
  d.upstream_sha = kSha40;
  d.pr_number = 2;
  d.event = "pull_request";
  d.action = "closed";
  d.landed = true;
  d.supersede_key = "pytorch/pytorch#2";
  EXPECT_EQ(format_gate_outputs(d),
            "should_build=true\n"
            "reason=PR #2 landed on master\n"
            "upstream_sha=" +
                kSha40 +
                "\n"
                "pr_number=2\n"
                "event=pull_request\n"
                "action=closed\n"
                "landed=true\n"
                "supersede_key=pytorch/pytorch#2\n"
                "base_sha=\n");
  EXPECT_EQ(format_gate_outputs(GateDecision{}),
            "should_build=false\nreason=\nupstream_sha=\npr_number=0\nevent=\naction=\n"
            "landed=false\nsupersede_key=\nbase_sha=\n");
}

TEST(GateOutputs, AnOpenPullRequestIsSelectedStagedUnlessTheConfigSaysFull) {
  GateDecision d;
  d.should_build = true;
  d.upstream_sha = kSha40;
  d.base_sha = std::string(40, 'b');
  SelectSettings select;
  EXPECT_EQ(dispatch_selection(d, select), "staged");
  std::string lines = format_gate_outputs(d, &select);
  EXPECT_NE(lines.find("base_sha=" + std::string(40, 'b') + "\nselection=staged\n"),
            std::string::npos)
      << lines;
  select.pull_requests = "full";
  EXPECT_EQ(dispatch_selection(d, select), "full");
  // Without the PR's base (pushes, nightlies, landed PRs) there is nothing to select against.
  select.pull_requests = "staged";
  d.base_sha.clear();
  EXPECT_EQ(dispatch_selection(d, select), "full");
  d.base_sha = std::string(40, 'b');
  d.should_build = false;
  EXPECT_EQ(dispatch_selection(d, select), "full");
}

}  // namespace
}  // namespace ootci
