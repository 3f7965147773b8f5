// The real `ootci select propose|rebucket` binary on an evidence store filled the way `ootci
// discover` and `ootci run` fill it: what it prints, the configs it writes (checked with `ootci
// plan check`), idempotence, human edits, the agent hook, and rebucketing from later runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "evidence/evidence_store.h"
#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using Lines = std::vector<std::string>;
const std::string kFile = "test/test_view_ops.py";
const std::string kDisabled =
    "Could not run 'aten::transpose.int' on the reference backend: switched off by "
    "OOTCI_REF_DISABLED_OPS";

const char* kUpstream = R"(import torch

class TestViewOps(TestCase):
    def test_view(self, device, dtype):
        pass

    @onlyNativeDeviceTypes
    def test_bug(self, device):
        self.assertEqual(1, 2)

class TestOldViewOps(TestCase):
    def test_transposes(self, device, dtype):
        pass
)";

const char* kKernels = R"(#include <torch/library.h>
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("view", TORCH_FN(view_impl));
  m.impl("empty.memory_format", TORCH_FN(empty_impl));
}
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}
)";

struct Variant {
  std::string base, name, dtype, outcome, error_class, message;
  std::vector<std::string> ops;
};

// What discovery saw on the device: a pass, a switched-off op, a crash, a missing kernel, a
// dtype the device lacks, an upstream skip, and a bug in kernels the device has.
std::vector<Variant> discovery() {
  return {
      {"TestViewOps::test_view",
       "test_view_privateuseone_float32",
       "float32",
       "passed",
       "",
       "",
       {"aten::empty.memory_format", "aten::view"}},
      {"TestViewOps::test_view", "test_view_privateuseone_int64", "int64", "passed", "", "", {}},
      {"TestViewOps::test_t_view",
       "test_t_view_privateuseone_float32",
       "float32",
       "failed",
       "NotImplementedError",
       kDisabled,
       {"aten::transpose.int", "aten::view"}},
      {"TestViewOps::test_t_view",
       "test_t_view_privateuseone_int64",
       "int64",
       "failed",
       "NotImplementedError",
       kDisabled,
       {"aten::transpose.int", "aten::view"}},
      {"TestViewOps::test_conj_view",
       "test_conj_view_privateuseone",
       "",
       "error",
       "SIGSEGV",
       "",
       {}},
      {"TestViewOps::test_unfold_view",
       "test_unfold_view_privateuseone",
       "",
       "failed",
       "NotImplementedError",
       "Could not run 'aten::unfold' with arguments from the 'PrivateUse1' backend.",
       {"aten::unfold", "aten::view"}},
      {"TestOldViewOps::test_transposes",
       "test_transposes_privateuseone_float32",
       "float32",
       "passed",
       "",
       "",
       {}},
      {"TestOldViewOps::test_transposes",
       "test_transposes_privateuseone_complex64",
       "complex64",
       "error",
       "SIGSEGV",
       "",
       {}},
      {"TestOldViewOps::test_transposes",
       "test_transposes_privateuseone_complex128",
       "complex128",
       "failed",
       "RuntimeError",
       "\"transpose\" not implemented for 'ComplexDouble'",
       {}},
      {"TestViewOps::test_cuda_only",
       "test_cuda_only_privateuseone",
       "",
       "skipped",
       "",
       "Skipped: Only runs on cuda",
       {}},
      {"TestViewOps::test_bug",
       "test_bug_privateuseone",
       "",
       "failed",
       "AssertionError",
       "Scalars are not equal!",
       {"aten::empty.memory_format", "aten::view"}},
  };
}

TestResult to_result(const Variant& v, const std::string& mode, int64_t finished_ms) {
  TestResult r;
  r.file = kFile;
  r.cls = v.base.substr(0, v.base.find("::")) + "PRIVATEUSEONE";
  r.name = v.name;
  r.test_id = kFile + "::" + r.cls + "::" + v.name;
  r.device = "privateuseone";
  r.dtype = v.dtype;
  r.mode = parse_test_mode(mode);
  r.outcome = *parse_outcome(v.outcome);
  r.error_class = v.error_class;
  r.message = v.message;
  r.finished_ms = finished_ms;
  r.base = v.base;
  r.ops = v.ops;
  return r;
}

void add_run(EvidenceStore& store, const std::string& id, int64_t started_ms,
             const std::vector<TestResult>& results) {
  RunInfo run;
  run.id = id;
  run.backend = "reference";
  run.status = RunStatus::kRunning;
  run.started_ms = started_ms;
  store.begin_run(run);
  // One by one, as the runner records: record_batch mixes up rows when several carry ops.
  for (const TestResult& r : results) store.record(id, r);
  store.finish_run(id, started_ms + 100, RunStatus::kFinished, Conclusion::kFailure,
                   nlohmann::json::object());
}

class SelectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::canonical(make_temp_dir()).string();
    std::filesystem::create_directories(dir_ + "/torch/test");
    write_file(dir_ + "/torch/" + kFile, kUpstream);
    std::filesystem::create_directories(dir_ + "/backend/csrc");
    write_file(dir_ + "/backend/csrc/kernels.cpp", kKernels);
    write_config("");
    db_ = dir_ + "/backend/.ootci/evidence.db";
    out_ = dir_ + "/backend/proposed";
    auto store = EvidenceStore::open(db_);
    std::vector<TestResult> results;
    for (const auto& v : discovery()) results.push_back(to_result(v, "mandatory_success", 1500));
    add_run(*store, "r-disc", 1000, results);
    store->mark_discovered({kFile, "sha-of-file", "rev-1", "r-disc", 1100});
  }

  void write_config(const std::string& extra) {
    write_file(dir_ + "/backend/ootci.yaml",
               "backend: {name: reference, device_type: privateuseone}\n"
               "upstream: {torch_root: " +
                   dir_ + "/torch}\ntest_configs: [proposed/*.yaml]\n" + extra);
  }

  std::string config() const { return dir_ + "/backend/ootci.yaml"; }
  std::string proposed() const { return out_ + "/test_view_ops.yaml"; }

  CliRun propose(Lines extra = {}) {
    Lines args = {"select", "propose", "--config", config(), "--out", out_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ootci(args);
  }

  std::string dir_, db_, out_;
};

TEST_F(SelectCli, ProposeWritesOneValidConfigPerFileAndIsIdempotent) {
  CliRun r = propose();
  ASSERT_EQ(r.code, 0) << r.err;
  Lines out = split_lines(r.out);
  ASSERT_GE(out.size(), 4u) << r.out;
  EXPECT_EQ(out[0], kFile + " -> " + proposed() + ": created");
  EXPECT_EQ(out[1],
            "  11 variants from 1 run: 3 mandatory_success, 4 xfail, 1 xfail_strict, 3 skip");
  EXPECT_EQ(out[2], "  entries: 8 (was 0); names: 8 added, 0 changed, 0 removed");
  EXPECT_EQ(out.back(), "1 file: 1 created, 0 updated, 0 unchanged");
  EXPECT_NE(r.out.find("  + xfail [1 name]: xfail: aten::transpose.int is not implemented on the "
                       "device (NotImplementedError: " +
                       kDisabled + ")\n"),
            std::string::npos)
      << r.out;

  std::string text = read_file(proposed());
  for (const std::string& expected : {
           std::string("        # ootci: xfail_strict: fails in every run although every op it "
                       "calls has a device kernel (2\n"
                       "        #        ops), so a pass means the bug is fixed (AssertionError: "
                       "Scalars are not equal!)\n"
                       "        - names:\n"
                       "            - TestViewOps::test_bug\n"
                       "          mode: xfail_strict  # xfail_strict: fails in every run although "
                       "every op it calls has ...\n"),
           std::string("        # ootci: mandatory_success: passed in every run; excluded dtype "
                       "complex64: crashes the test\n"
                       "        #        process with SIGSEGV in every run\n"
                       "        - names:\n"
                       "            - TestOldViewOps::test_transposes\n"
                       "          mode: mandatory_success\n"
                       "          edits:\n"
                       "            dtypes:\n"
                       "              exclude:\n"
                       "                - name: complex64\n"),
           std::string("        # ootci: skip: upstream skips it on this device (Skipped: Only "
                       "runs on cuda)\n"),
           // complex128 fails: an entry of its own for that dtype, before the method's other one.
           std::string("        # ootci: xfail: for complex128: dtype complex128 is not supported "
                       "on the device\n"
                       "        #        (RuntimeError: \"transpose\" not implemented for "
                       "'ComplexDouble')\n"
                       "        - names:\n"
                       "            - TestOldViewOps::test_transposes\n"
                       "          mode: xfail  # xfail: for complex128: dtype complex128 is not "
                       "supported on the device\n"
                       "          edits:\n"
                       "            dtypes:\n"
                       "              include:\n"
                       "                - name: complex128\n"),
       })
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\nin:\n" << text;

  CliRun check = run_ootci({"plan", "check", proposed()});
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_EQ(check.out, "ok: 1 files, 8 rules\n");
  // The backend's own plan now takes the proposed config.
  CliRun resolve = run_ootci({"plan", "resolve", "--config", config(), "-o", dir_ + "/plan.json"});
  EXPECT_EQ(resolve.code, 0) << resolve.err;

  // Nothing new: nothing changes.
  CliRun again = propose();
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(split_lines(again.out)[0], kFile + " -> " + proposed() + ": unchanged");
  EXPECT_EQ(split_lines(again.out)[2],
            "  entries: 8 (was 8); names: 0 added, 0 changed, 0 removed");
  EXPECT_EQ(split_lines(again.out).back(), "1 file: 0 created, 0 updated, 1 unchanged");
  EXPECT_EQ(read_file(proposed()), text);
}

// Every `- Name` line under `names:` of a written config.
Lines written_names(const std::string& text) {
  Lines out;
  bool in_names = false;
  for (const std::string& line : split_lines(text)) {
    std::string t = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (t == "- names:") {
      in_names = true;
    } else if (in_names && t.rfind("- ", 0) == 0) {
      out.push_back(t.substr(2));
    } else {
      in_names = false;
    }
  }
  return out;
}

TEST_F(SelectCli, ProposedEntriesNameBaseMethodsAndDecideVariantsByDtypeEdits) {
  CliRun r = propose({"--variants", dir_ + "/variants.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::set<std::string> bases;
  for (const auto& v : discovery()) bases.insert(v.base);
  Lines names = written_names(read_file(proposed()));
  ASSERT_EQ(names.size(), 8u) << read_file(proposed());
  for (const auto& n : names) EXPECT_TRUE(bases.count(n)) << n << " is not a base method";
  // test_transposes: complex128 fails (its own entry), complex64 crashes (excluded).
  EXPECT_EQ(std::count(names.begin(), names.end(), "TestOldViewOps::test_transposes"), 2);
  nlohmann::json decided = nlohmann::json::parse(read_file(dir_ + "/variants.json"));
  EXPECT_EQ(decided["version"], 1);
  std::string id = kFile + "::TestOldViewOpsPRIVATEUSEONE::test_transposes_privateuseone_";
  EXPECT_EQ(decided["variants"][id + "float32"], "mandatory_success");
  EXPECT_EQ(decided["variants"][id + "complex128"], "xfail");
  EXPECT_EQ(decided["variants"][id + "complex64"], "skip");
  EXPECT_EQ(decided["variants"].size(), 11u);
  EXPECT_NE(r.out.find("  + xfail [complex128] [1 name]: xfail: for complex128: dtype complex128 "
                       "is not supported on the device"),
            std::string::npos)
      << r.out;
}

TEST_F(SelectCli, LabelsComeFromSelectLabels) {
  ASSERT_EQ(propose().code, 0);
  EXPECT_NE(read_file(proposed()).find("\n  labels: [unit]\n"), std::string::npos);
  std::filesystem::remove(proposed());
  write_config("select:\n  labels: [trunk, unit]\n");
  ASSERT_EQ(propose().code, 0);
  EXPECT_NE(read_file(proposed()).find("\n  labels: [trunk, unit]\n"), std::string::npos);
  // An existing file keeps its labels; when they leave the vocabulary, propose says so.
  write_config("select:\n  labels: [integration]\n");
  CliRun kept = propose();
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(read_file(proposed()).find("\n  labels: [trunk, unit]\n"), std::string::npos);
  EXPECT_NE(kept.err.find("warning: " + proposed() +
                          ": its labels [trunk, unit] name none of select.labels [integration]"),
            std::string::npos)
      << kept.err;
  write_config("select:\n  labels: []\n");
  CliRun empty = propose();
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.err.find("select.labels: expected a non-empty list (a file without labels is "
                           "never selected)"),
            std::string::npos)
      << empty.err;
}

TEST_F(SelectCli, HumanEditsSurviveAndDryRunWritesNothing) {
  ASSERT_EQ(propose().code, 0);
  std::string text = read_file(proposed());
  // Adopt the test_t_view entry (its `# ootci:` line goes) and add an entry of our own.
  std::string marker = "        # ootci: xfail: aten::transpose.int";
  size_t at = text.find(marker);
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  std::string mine =
      "        # Ours: the unfold kernel lands next week (DEV-7).\n"
      "        - names: [TestViewOps::test_unfold_view]\n"
      "          mode: skip\n";
  text += mine;
  write_file(proposed(), text);

  CliRun dry = propose({"--dry-run"});
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_EQ(split_lines(dry.out)[0],
            kFile + " -> " + proposed() + ": updated (dry run, not written)");
  EXPECT_EQ(split_lines(dry.out).back(),
            "1 file: 0 created, 1 updated, 0 unchanged (dry run: nothing written)");
  EXPECT_EQ(read_file(proposed()), text);

  CliRun r = propose();
  ASSERT_EQ(r.code, 0) << r.err;
  Lines out = split_lines(r.out);
  EXPECT_EQ(out[1],
            "  11 variants from 1 run: 3 mandatory_success, 1 xfail, 1 xfail_strict, 3 skip, 3 "
            "under human entries");
  EXPECT_EQ(out[2],
            "  entries: 6 (was 7); names: 0 added, 0 changed, 1 removed; 2 human entries kept");
  EXPECT_EQ(out[3], "  - TestViewOps::test_unfold_view (was xfail)");
  std::string after = read_file(proposed());
  EXPECT_NE(after.find("        - names:\n            - TestViewOps::test_t_view\n          mode: "
                       "xfail  # xfail: aten::transpose.int is not implemented on the device\n"),
            std::string::npos)
      << after;
  EXPECT_EQ(after.find("# ootci: xfail: aten::transpose.int"), std::string::npos);
  EXPECT_NE(after.find(mine), std::string::npos);
  EXPECT_EQ(after.find("# ootci: xfail: aten::unfold"), std::string::npos);
  EXPECT_EQ(run_ootci({"plan", "check", proposed()}).code, 0);
  // Stable from here on.
  ASSERT_EQ(propose().code, 0);
  EXPECT_EQ(read_file(proposed()), after);

  CliRun overwrite = propose({"--overwrite-human"});
  ASSERT_EQ(overwrite.code, 0) << overwrite.err;
  EXPECT_NE(overwrite.out.find("2 human entries overwritten"), std::string::npos) << overwrite.out;
  EXPECT_EQ(read_file(proposed()).find("DEV-7"), std::string::npos);
  EXPECT_NE(read_file(proposed()).find("# ootci: xfail: aten::transpose.int"), std::string::npos);
}

// A scripted agent: one proposal the evidence supports, one it forbids.
const char* kAgent = R"PY(import json, sys
bundle = json.load(sys.stdin)
assert bundle["version"] == 1 and bundle["file"] == "test/test_view_ops.py", bundle
bug = [t for t in bundle["tests"] if t["base"] == "TestViewOps::test_bug"][0]
assert "self.assertEqual(1, 2)" in bug["source"], bug["source"]
json.dump({"proposals": [
    {"base": "TestViewOps::test_bug", "mode": "skip", "reason": "needs a real device"},
    {"base": "TestViewOps::test_conj_view", "mode": "mandatory_success", "reason": "fine"},
]}, sys.stdout)
)PY";

TEST_F(SelectCli, AnAgentsProposalsAreCheckedAgainstTheEvidence) {
  write_file(dir_ + "/backend/agent.py", kAgent);
  write_config("select:\n  agent_command: [/usr/bin/python3, " + dir_ +
               "/backend/agent.py]\n  agent_timeout_s: 60\n");
  CliRun r = propose();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("  agent: accepted proposals[0] TestViewOps::test_bug -> skip (1 variant)\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  agent: rejected proposals[1] TestViewOps::test_conj_view -> "
                       "mandatory_success: mandatory_success is not allowed: " +
                       kFile +
                       "::TestViewOpsPRIVATEUSEONE::test_conj_view_privateuseone crashed the test "
                       "process with SIGSEGV in 1 of 1 run\n"),
            std::string::npos)
      << r.out;
  std::string text = read_file(proposed());
  EXPECT_NE(
      text.find("        # ootci: agent: needs a real device\n        - names:\n            - "
                "TestViewOps::test_bug\n          mode: skip  # agent: needs a real device\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# ootci: skip: crashes the test process with SIGSEGV"), std::string::npos);
  EXPECT_EQ(run_ootci({"plan", "check", proposed()}).code, 0);

  // --no-agent: the deterministic buckets.
  ASSERT_EQ(propose({"--no-agent"}).code, 0);
  EXPECT_EQ(read_file(proposed()).find("agent:"), std::string::npos);

  // A broken agent is a warning; the deterministic buckets stand.
  write_config("select:\n  agent_command: [/bin/false]\n");
  CliRun broken = propose();
  EXPECT_EQ(broken.code, 0);
  EXPECT_NE(broken.err.find("warning: " + kFile +
                            ": agent: select.agent_command /bin/false failed "
                            "(exit 1); the deterministic buckets stand"),
            std::string::npos)
      << broken.err;
}

TEST_F(SelectCli, RebucketPromotesAdmitsAndListsRegressionsButNeverDemotes) {
  ASSERT_EQ(propose().code, 0);
  // Two runs of the proposed configs: transpose works again, test_view breaks in the second.
  auto store = EvidenceStore::open(db_);
  for (int i = 1; i <= 2; ++i) {
    std::vector<TestResult> results;
    for (Variant v : discovery()) {
      std::string mode = "mandatory_success";
      if (v.base == "TestViewOps::test_conj_view" || v.base == "TestViewOps::test_cuda_only" ||
          v.dtype == "complex64")
        continue;  // skipped by the config: never created
      if (v.base == "TestViewOps::test_t_view") {
        mode = "xfail";
        v.outcome = "xpassed";
        v.error_class = v.message = "";
      } else if (v.base == "TestViewOps::test_unfold_view" || v.dtype == "complex128") {
        mode = "xfail";
        v.outcome = "xfailed";
      } else if (v.base == "TestViewOps::test_bug") {
        mode = "xfail_strict";
        v.outcome = "xfailed";
      }
      if (i == 2 && v.name == "test_view_privateuseone_float32") {
        v.outcome = "failed";
        v.error_class = "RuntimeError";
        v.message = "boom";
      }
      v.ops.clear();  // a normal run records no ops
      results.push_back(to_result(v, mode, 1000 + 1000 * i + 500));
    }
    add_run(*store, "r-" + std::to_string(i), 1000 + 1000 * i, results);
  }
  store.reset();
  // The backend now implements unfold.
  std::string kernels = kKernels;
  kernels.insert(kernels.find("}\n"), "  m.impl(\"unfold\", TORCH_FN(unfold_impl));\n");
  write_file(dir_ + "/backend/csrc/kernels.cpp", kernels);

  std::string before = read_file(proposed());
  Lines args = {"select", "rebucket", "--run", "r-2", "--config", config(), "--out", out_};
  CliRun r = run_ootci(args);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string id = kFile + "::TestViewOpsPRIVATEUSEONE::";
  EXPECT_EQ(split_lines(r.out),
            (Lines{
                "run r-2: 8 results; 2 promotions, 1 admission, 1 regression candidate",
                kFile + " (" + proposed() + ")",
                "  promote TestViewOps::test_t_view_privateuseone_float32: mandatory_success: "
                "promoted from xfail: passed in the last 2 runs it ran in",
                "  promote TestViewOps::test_t_view_privateuseone_int64: mandatory_success: "
                "promoted from xfail: passed in the last 2 runs it ran in",
                "  admit TestViewOps::test_unfold_view_privateuseone: mandatory_success: "
                "admitted: aten::unfold now has a device kernel, and so does every op it calls",
                "regression candidates (mandatory_success failures, never demoted): 1, in " + out_ +
                    "/regressions.json",
                "  " + id + "test_view_privateuseone_float32  RuntimeError: boom",
                "not written: pass --write to apply the moves",
            }));
  EXPECT_EQ(read_file(proposed()), before);
  // The device page's record of the proposed moves, beside the evidence.
  nlohmann::json changes =
      nlohmann::json::parse(read_file(dir_ + "/backend/.ootci/bucket_changes.json"));
  EXPECT_EQ(changes["command"], "rebucket");
  EXPECT_EQ(changes["written"], false);
  ASSERT_EQ(changes["changes"].size(), 3u);
  EXPECT_EQ(changes["changes"][0],
            (nlohmann::json{{"file", kFile},
                            {"name", "TestViewOps::test_t_view_privateuseone_float32"},
                            {"from", "xfail"},
                            {"to", "mandatory_success"},
                            {"reason",
                             "mandatory_success: promoted from xfail: passed in the last 2 runs "
                             "it ran in"}}));
  nlohmann::json regressions = nlohmann::json::parse(read_file(out_ + "/regressions.json"));
  EXPECT_EQ(regressions,
            (nlohmann::json::array({{{"test_id", id + "test_view_privateuseone_float32"},
                                     {"base", "TestViewOps::test_view"},
                                     {"error_class", "RuntimeError"},
                                     {"message", "boom"},
                                     {"run_id", "r-2"}}})));

  // One pass is not enough with --promote-after 3.
  args.insert(args.end(), {"--promote-after", "3"});
  CliRun strict = run_ootci(args);
  ASSERT_EQ(strict.code, 0) << strict.err;
  EXPECT_EQ(split_lines(strict.out)[0],
            "run r-2: 8 results; 0 promotions, 1 admission, 1 regression candidate");

  args.resize(args.size() - 2);
  args.push_back("--write");
  CliRun w = run_ootci(args);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(split_lines(w.out).back(), "wrote " + proposed() + ": 3 moves applied");
  std::string after = read_file(proposed());
  EXPECT_NE(
      after.find("        # ootci: mandatory_success: promoted from xfail: passed in the last "
                 "2 runs it ran in\n        - names:\n            - "
                 "TestViewOps::test_t_view\n          mode: mandatory_success\n"),
      std::string::npos)
      << after;
  EXPECT_NE(after.find("        # ootci: mandatory_success: admitted: aten::unfold now has a "
                       "device kernel, and so does\n        #        every op it calls\n"
                       "        - names:\n            - TestViewOps::test_unfold_view\n"),
            std::string::npos)
      << after;
  // The regression stays mandatory.
  EXPECT_NE(after.find("            - TestViewOps::test_view\n          mode: mandatory_success\n"),
            std::string::npos);
  EXPECT_EQ(run_ootci({"plan", "check", proposed()}).code, 0);

  // Proposing again from all the evidence agrees: transpose is fixed, test_view a regression.
  CliRun again = propose({"--no-agent"});
  ASSERT_EQ(again.code, 0) << again.err;
  std::string reproposed = read_file(proposed());
  EXPECT_NE(reproposed.find("# ootci: mandatory_success: passed in every run since it last "
                            "failed\n        - names:\n            - TestViewOps::test_t_view\n"),
            std::string::npos)
      << reproposed;
  EXPECT_NE(reproposed.find("candidate, never demoted (1 variant); passed in every run (1 "
                            "variant)\n        #        (RuntimeError: boom)\n        - names:\n"
                            "            - TestViewOps::test_view\n"
                            "          mode: mandatory_success\n"),
            std::string::npos)
      << reproposed;
}

TEST_F(SelectCli, ClearErrors) {
  CliRun r = run_ootci(
      {"select", "propose", "--config", config(), "--out", out_, "--evidence", dir_ + "/none.db"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: no evidence database at " + dir_ + "/none.db\n");
  r = propose({"--files", "test/test_nn.py"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: --files matches none of the discovered files (" + kFile + ")\n");
  r = run_ootci({"select", "rebucket", "--run", "r-nope", "--config", config(), "--out", out_});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: run r-nope not found in " + db_ + "\n");
  EXPECT_EQ(run_ootci({"select", "propose", "--config", config()}).code, 2);
}

}  // namespace
}  // namespace ootci
