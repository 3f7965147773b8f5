// The real `ootci gate` binary: what it prints, what it appends to $GITHUB_OUTPUT, exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

const std::string kBaseHead = "0123456789abcdef0123456789abcdef01234567";

// ootci.yaml for the fixtures' Hello-World PRs onto master; the base head comes from echo.
std::string write_config(const std::string& dir, const std::string& gate_extra = "") {
  std::string path = dir + "/ootci.yaml";
  write_file(path,
             "backend: {name: spyre, device_type: spyre}\n"
             "upstream: {torch_root: .}\n"
             "test_configs: [c.yaml]\n"
             "gate:\n"
             "  pull_request:\n"
             "    require_merged: true\n"
             "    base_branches: [master]\n"
             "  base_head_command: [/bin/echo, \"" +
                 kBaseHead + "\trefs/heads/{branch}\"]\n" + gate_extra);
  return path;
}

// The closed-but-unmerged fixture with PyTorch's merge-bot label: it landed.
std::string write_landed_payload(const std::string& dir) {
  json pr =
      json::parse(read_file(fixture_path("github-webhooks/pull_request.closed.unmerged.json")));
  pr["pull_request"]["labels"].push_back({{"name", "Merged"}});
  json client_payload = {{"event_type", "pull_request"}, {"delivery_id", "d-1"}, {"payload", pr}};
  write_file(dir + "/dispatch.json", client_payload.dump());
  return dir + "/dispatch.json";
}

const Lines kLandedOutputs = {
    "should_build=true",
    "reason=PR #2 landed on master (Merged label): builds the head of master, " + kBaseHead,
    "upstream_sha=" + kBaseHead,
    "pr_number=2",
    "event=pull_request",
    "action=closed",
    "landed=true",
    "supersede_key=Codertocat/Hello-World#2",
    "base_sha=",  // a landed PR tests its base branch whole
    "selection=full",
};

TEST(GateCli, ABuildDecisionIsPrintedAndAppendedToGithubOutput) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  std::string payload = write_landed_payload(dir);
  write_file(dir + "/github_output", "earlier=1\n");
  CliRun r = run_ootci({"gate", "--payload", payload, "--config", config},
                       {{"GITHUB_OUTPUT", dir + "/github_output"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out), kLandedOutputs);
  Lines written = split_lines(read_file(dir + "/github_output"));
  Lines expected = {"earlier=1"};
  expected.insert(expected.end(), kLandedOutputs.begin(), kLandedOutputs.end());
  EXPECT_EQ(written, expected);
}

TEST(GateCli, AcceptsAWholeRepositoryDispatchBodyAndAnExplicitOutputFile) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  json body = {{"event_type", "pull_request"},
               {"client_payload", json::parse(read_file(write_landed_payload(dir)))}};
  write_file(dir + "/body.json", body.dump());
  CliRun r = run_ootci({"gate", "--payload", dir + "/body.json", "--config", config,
                        "--github-output", dir + "/out.txt"},
                       {{"GITHUB_OUTPUT", ""}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out), kLandedOutputs);
  EXPECT_EQ(split_lines(read_file(dir + "/out.txt")), kLandedOutputs);
}

TEST(GateCli, ANoBuildDecisionStillExitsZero) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  json opened = {
      {"event_type", "pull_request"},
      {"delivery_id", "d-2"},
      {"payload",
       json::parse(read_file(fixture_path("github-webhooks/pull_request.opened.json")))}};
  write_file(dir + "/dispatch.json", opened.dump());
  CliRun r = run_ootci({"gate", "--payload", dir + "/dispatch.json", "--config", config},
                       {{"GITHUB_OUTPUT", ""}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out), (Lines{
                                    "should_build=false",
                                    "reason=not merged: policy requires a landed PR (PR #2 opened)",
                                    "upstream_sha=",
                                    "pr_number=2",
                                    "event=pull_request",
                                    "action=opened",
                                    "landed=false",
                                    "supersede_key=Codertocat/Hello-World#2",
                                    "base_sha=",
                                    "selection=full",
                                }));
}

TEST(GateCli, NightlyRunsTheConfiguredCommand) {
  std::string dir = make_temp_dir();
  std::string config =
      write_config(dir, "  nightly:\n    command: [/bin/echo, \"nightly (" + kBaseHead + ")\"]\n");
  CliRun r = run_ootci({"gate", "--nightly", "--config", config}, {{"GITHUB_OUTPUT", ""}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(r.out), (Lines{
                                    "should_build=true",
                                    "reason=nightly: builds " + kBaseHead + " from /bin/echo",
                                    "upstream_sha=" + kBaseHead,
                                    "pr_number=0",
                                    "event=nightly",
                                    "action=",
                                    "landed=false",
                                    "supersede_key=nightly",
                                    "base_sha=",
                                    "selection=full",
                                }));
}

TEST(GateCli, NightlyWithoutACommandIsAnError) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  CliRun r = run_ootci({"gate", "--nightly", "--config", config}, {{"GITHUB_OUTPUT", ""}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: gate.nightly.command is not set in " + config + "\n");
}

TEST(GateCli, BadJsonIsAnError) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  write_file(dir + "/dispatch.json", "{\"event_type\": ");
  CliRun r = run_ootci({"gate", "--payload", dir + "/dispatch.json", "--config", config},
                       {{"GITHUB_OUTPUT", dir + "/github_output"}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("error: " + dir + "/dispatch.json: invalid JSON: ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/github_output"));
}

TEST(GateCli, AMalformedPayloadNamesFileAndJsonPath) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  json c = json::parse(read_file(write_landed_payload(dir)));
  c["payload"]["pull_request"]["base"].erase("ref");
  write_file(dir + "/dispatch.json", c.dump());
  CliRun r = run_ootci({"gate", "--payload", dir + "/dispatch.json", "--config", config},
                       {{"GITHUB_OUTPUT", ""}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: " + dir +
                       "/dispatch.json: client_payload.payload.pull_request.base.ref: missing\n");
}

TEST(GateCli, AGateConfigErrorNamesFileAndLine) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir, "  push:\n    refs: [\"refs/tags/*\"]\n    tags: []\n");
  CliRun r = run_ootci({"gate", "--payload", write_landed_payload(dir), "--config", config},
                       {{"GITHUB_OUTPUT", ""}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, config + ":11:5: gate.push.tags: unknown key\n");
}

TEST(GateCli, UsageErrorsExit2) {
  std::string dir = make_temp_dir();
  std::string config = write_config(dir);
  CliRun none = run_ootci({"gate", "--config", config}, {{"GITHUB_OUTPUT", ""}});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--payload (or --nightly) is required"), std::string::npos) << none.err;
  CliRun both = run_ootci({"gate", "--nightly", "--payload", "x.json", "--config", config},
                          {{"GITHUB_OUTPUT", ""}});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace ootci
