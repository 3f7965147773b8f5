#include "adapt/agent_hook.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

const std::string kFile = "test/test_x.py";

VariantEvidence variant(const std::string& name, const std::string& dtype,
                        const std::vector<std::pair<std::string, std::string>>& outcomes,
                        std::vector<std::string> ops = {}) {
  VariantEvidence v;
  v.name = name;
  v.test_id = kFile + "::TestXPRIVATEUSEONE::" + name;
  v.dtype = dtype;
  v.ops = std::move(ops);
  for (const auto& [outcome, error_class] : outcomes) {
    TestResult r;
    r.test_id = v.test_id;
    r.outcome = *parse_outcome(outcome);
    r.error_class = error_class;
    r.message = error_class.empty() ? "" : error_class + ": boom";
    r.mode = TestMode::kMandatorySuccess;
    v.results.push_back(r);
  }
  return v;
}

FileEvidence evidence() {
  FileEvidence f;
  f.relpath = kFile;
  f.bases = {
      {"TestX::test_crash", {variant("test_crash_privateuseone", "", {{"error", "SIGSEGV"}})}},
      {"TestX::test_dtypes",
       {variant("test_dtypes_privateuseone_complex64", "complex64", {{"failed", "RuntimeError"}}),
        variant("test_dtypes_privateuseone_float32", "float32", {{"passed", ""}, {"passed", ""}},
                {"aten::add.Tensor"})}},
      {"TestX::test_fails",
       {variant("test_fails_privateuseone", "", {{"failed", "RuntimeError"}})}},
      {"TestX::test_never", {variant("test_never_privateuseone", "", {{"skipped", ""}})}},
      {"TestX::test_passes", {variant("test_passes_privateuseone", "", {{"passed", ""}})}},
  };
  return f;
}

std::vector<std::vector<Bucket>> deterministic(const FileEvidence& f) {
  std::vector<std::vector<Bucket>> out;
  for (const auto& b : f.bases) out.push_back(bucket_variants(b, Capabilities{}));
  return out;
}

const char* kUpstream = R"(import torch

def helper():
    pass

class TestX(TestCase):
    def setUp(self):
        pass

    @dtypes(torch.float32,
            torch.complex64)
    @onlyNativeDeviceTypes
    def test_dtypes(self, device, dtype):
        x = torch.ones(2, device=device, dtype=dtype)

        # a comment inside
        self.assertEqual(x + x, 2 * x)

    # about the next test
    def test_passes(self, device):
        pass


class TestOther(TestCase):
    def test_dtypes(self):
        pass

def test_plain():
    return 1
)";

TEST(AgentHook, TestSourceByIndentation) {
  EXPECT_EQ(python_test_source(kUpstream, "TestX", "test_dtypes"),
            R"(    @dtypes(torch.float32,
            torch.complex64)
    @onlyNativeDeviceTypes
    def test_dtypes(self, device, dtype):
        x = torch.ones(2, device=device, dtype=dtype)

        # a comment inside
        self.assertEqual(x + x, 2 * x)
)");
  EXPECT_EQ(python_test_source(kUpstream, "TestX", "test_passes"),
            "    def test_passes(self, device):\n        pass\n");
  EXPECT_EQ(python_test_source(kUpstream, "TestOther", "test_dtypes"),
            "    def test_dtypes(self):\n        pass\n");
  EXPECT_EQ(python_test_source(kUpstream, "", "test_plain"), "def test_plain():\n    return 1\n");
  EXPECT_EQ(python_test_source(kUpstream, "TestX", "test_missing"), "");
  EXPECT_EQ(python_test_source(kUpstream, "TestNope", "test_dtypes"), "");
}

TEST(AgentHook, BundleFollowsTheContract) {
  FileEvidence f = evidence();
  Capabilities caps;
  caps.supported_ops = {"aten::view"};
  caps.has_fallback = true;
  nlohmann::json b = agent_bundle(f, deterministic(f), kUpstream, caps);
  EXPECT_EQ(b["version"], 1);
  EXPECT_EQ(b["file"], kFile);
  EXPECT_EQ(b["supported_ops"], nlohmann::json::array({"aten::view"}));
  EXPECT_TRUE(b["supported_dtypes"].is_null());
  EXPECT_EQ(b["has_fallback"], true);
  ASSERT_EQ(b["tests"].size(), 5u);
  const nlohmann::json& t = b["tests"][1];
  EXPECT_EQ(t["base"], "TestX::test_dtypes");
  EXPECT_EQ(t["test_id"], kFile + "::TestX::test_dtypes");
  EXPECT_NE(t["source"].get<std::string>().find("def test_dtypes(self, device, dtype):"),
            std::string::npos);
  ASSERT_EQ(t["variants"].size(), 2u);
  EXPECT_EQ(t["variants"][0],
            (nlohmann::json{
                {"test_id", kFile + "::TestXPRIVATEUSEONE::test_dtypes_privateuseone_complex64"},
                {"op", ""},
                {"dtype", "complex64"},
                {"outcomes", {"failed"}},
                {"error_class", "RuntimeError"},
                {"message", "RuntimeError: boom"},
                {"ops", nlohmann::json::array()},
                {"proposed",
                 {{"mode", "xfail"},
                  {"reason",
                   "xfail: fails only for dtype complex64; the other dtypes pass "
                   "(RuntimeError: boom)"}}}}));
  EXPECT_EQ(t["variants"][1]["outcomes"], nlohmann::json::array({"passed", "passed"}));
  EXPECT_EQ(t["variants"][1]["ops"], nlohmann::json::array({"aten::add.Tensor"}));
  EXPECT_EQ(b["tests"][0]["variants"][0]["outcomes"], nlohmann::json::array({"crashed"}));
}

TEST(AgentHook, EveryProposalIsCheckedAgainstTheEvidence) {
  FileEvidence f = evidence();
  std::vector<std::vector<Bucket>> buckets = deterministic(f);
  nlohmann::json answer = nlohmann::json::parse(R"({"proposals": [
    {"base": "TestX::test_passes", "mode": "xfail", "reason": "numerics are off on the device"},
    {"base": "TestX::test_fails", "mode": "mandatory_success", "reason": "looks fine"},
    {"base": "TestX::test_crash", "mode": "xfail", "reason": "conj is missing"},
    {"base": "TestX::test_never", "mode": "mandatory_success", "reason": "should pass"},
    {"base": "TestX::test_dtypes", "dtype": "complex64", "mode": "skip", "reason": "no complex"},
    {"base": "TestX::test_nope", "mode": "skip", "reason": "x"},
    {"base": "TestX::test_passes", "mode": "sometimes", "reason": "x"},
    {"base": "TestX::test_passes", "mode": "xfail_strict", "reason": "x"},
    {"base": "TestX::test_passes", "mode": "skip", "reason": "x", "confidence": "high"},
    {"base": "TestX::test_dtypes", "dtype": "int8", "mode": "skip", "reason": "x"},
    {"base": "TestX::test_crash", "mode": "skip"},
    "skip everything"
  ]})");
  std::vector<AgentVerdict> v = apply_agent_answer(answer, f, buckets);
  ASSERT_EQ(v.size(), 12u);
  std::vector<std::string> got;
  for (const auto& x : v)
    got.push_back(x.where + " " + (x.accepted ? "accepted" : "rejected: " + x.why));
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "proposals[0] accepted",
                "proposals[1] rejected: mandatory_success is not allowed: "
                "test/test_x.py::TestXPRIVATEUSEONE::test_fails_privateuseone failed in 1 of 1 run "
                "(RuntimeError: boom)",
                "proposals[2] rejected: xfail is not allowed: "
                "test/test_x.py::TestXPRIVATEUSEONE::test_crash_privateuseone crashed the test "
                "process with SIGSEGV in 1 of 1 run",
                "proposals[3] rejected: mandatory_success is not allowed: "
                "test/test_x.py::TestXPRIVATEUSEONE::test_never_privateuseone never ran on the "
                "device",
                "proposals[4] accepted",
                "proposals[5] rejected: no test TestX::test_nope in test/test_x.py",
                "proposals[6] rejected: unknown mode 'sometimes' (expected mandatory_success, "
                "xfail, xfail_strict or skip)",
                "proposals[7] rejected: xfail_strict is not allowed: "
                "test/test_x.py::TestXPRIVATEUSEONE::test_passes_privateuseone passed in 1 of 1 "
                "run, so a strict xfail would fail the run",
                "proposals[8] rejected: unknown key 'confidence'",
                "proposals[9] rejected: selects no variant of TestX::test_dtypes",
                "proposals[10] rejected: missing reason",
                "proposals[11] rejected: expected an object",
            }));
  EXPECT_EQ(v[4].summary, "TestX::test_dtypes dtype=complex64 -> skip");
  EXPECT_EQ(v[4].variants, 1u);
  // Accepted proposals replace the buckets; the rest stay deterministic.
  EXPECT_EQ(buckets[4][0].mode, TestMode::kXfail);
  EXPECT_EQ(buckets[4][0].reason(), "agent: numerics are off on the device");
  EXPECT_EQ(buckets[1][0].mode, TestMode::kSkip);
  EXPECT_EQ(buckets[1][0].reason(), "agent: no complex");
  EXPECT_EQ(buckets[1][1].mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(buckets[2][0].mode, TestMode::kXfail);
  EXPECT_EQ(buckets[2][0].cause, Cause::kFailure);

  EXPECT_THROW(apply_agent_answer(nlohmann::json{{"proposal", 1}}, f, buckets), Error);
}

// A scripted agent: checks what it got and answers with fixed proposals, one of them illegal.
const char* kScript = R"(import json, sys
bundle = json.load(sys.stdin)
assert bundle["version"] == 1, bundle
assert bundle["file"] == "test/test_x.py"
bases = [t["base"] for t in bundle["tests"]]
print("agent saw", len(bases), "tests", file=sys.stderr)
json.dump({"proposals": [
    {"base": "TestX::test_fails", "mode": "skip", "reason": "needs sparse support"},
    {"base": "TestX::test_crash", "mode": "mandatory_success", "reason": "I am sure"},
]}, sys.stdout)
)";

TEST(AgentHook, AScriptedCommandAnswersThroughStdinAndStdout) {
  std::string dir = make_temp_dir();
  write_file(dir + "/agent.py", kScript);
  FileEvidence f = evidence();
  std::vector<std::vector<Bucket>> buckets = deterministic(f);
  nlohmann::json answer = run_agent({"/usr/bin/python3", dir + "/agent.py"},
                                    agent_bundle(f, buckets, kUpstream, Capabilities{}), 60);
  std::vector<AgentVerdict> v = apply_agent_answer(answer, f, buckets);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[0].accepted);
  EXPECT_FALSE(v[1].accepted);
  EXPECT_NE(v[1].why.find("crashed the test process with SIGSEGV"), std::string::npos);
  EXPECT_EQ(buckets[2][0].reason(), "agent: needs sparse support");
  EXPECT_EQ(buckets[0][0].mode, TestMode::kSkip);
  EXPECT_EQ(buckets[0][0].cause, Cause::kCrash);
}

TEST(AgentHook, ABrokenAgentIsAnErrorNamingWhy) {
  std::string dir = make_temp_dir();
  write_file(dir + "/fail.sh", "echo 'model unavailable' >&2\nexit 3\n");
  write_file(dir + "/prose.sh", "cat >/dev/null\necho 'I think all tests are fine'\n");
  write_file(dir + "/slow.sh", "exec sleep 30\n");
  nlohmann::json bundle = {{"version", 1}};
  try {
    run_agent({"/bin/sh", dir + "/fail.sh"}, bundle, 60);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "select.agent_command /bin/sh failed (exit 3): model unavailable");
  }
  try {
    run_agent({"/bin/sh", dir + "/prose.sh"}, bundle, 60);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "select.agent_command /bin/sh printed no JSON object: I think all tests are fine");
  }
  try {
    run_agent({"/bin/sh", dir + "/slow.sh"}, bundle, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "select.agent_command /bin/sh: no answer within 1 s");
  }
}

}  // namespace
}  // namespace ootci
