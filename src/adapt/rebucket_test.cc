#include "adapt/rebucket.h"

#include <gtest/gtest.h>

#include "adapt/config_writer.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

const std::string kViewOpsFile = "test/test_view_ops.py";

TestResult result(const std::string& base, const std::string& variant, const std::string& mode,
                  const std::string& outcome, const std::string& error_class = "",
                  const std::string& message = "", bool flaky = false) {
  TestResult r;
  r.file = kViewOpsFile;
  r.cls = split_base(base).first + "PRIVATEUSEONE";
  r.name = variant;
  r.test_id = kViewOpsFile + "::" + r.cls + "::" + variant;
  r.base = base;
  r.mode = parse_test_mode(mode);
  r.outcome = *parse_outcome(outcome);
  r.error_class = error_class;
  r.message = message;
  r.flaky = flaky;
  return r;
}

TEST(Rebucket, MandatoryFailuresAreRegressionCandidatesNeverMoves) {
  std::vector<TestResult> run = {
      result("TestViewOps::test_b", "test_b_privateuseone", "mandatory_success", "failed",
             "RuntimeError", "boom"),
      result("TestViewOps::test_a", "test_a_privateuseone", "mandatory_success", "error", "SIGSEGV",
             ""),
      result("TestViewOps::test_c", "test_c_privateuseone", "xfail", "xfailed"),
      result("TestViewOps::test_d", "test_d_privateuseone", "mandatory_success", "passed"),
      result("TestViewOps::test_e", "test_e_privateuseone", "mandatory_success", "passed", "", "",
             true),
  };
  std::vector<Regression> r = regressions_in("r-2", run);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].test_id, kViewOpsFile + "::TestViewOpsPRIVATEUSEONE::test_a_privateuseone");
  EXPECT_EQ(r[0].error_class, "SIGSEGV");
  EXPECT_EQ(regressions_json(r)[1],
            (nlohmann::json{
                {"test_id", kViewOpsFile + "::TestViewOpsPRIVATEUSEONE::test_b_privateuseone"},
                {"base", "TestViewOps::test_b"},
                {"error_class", "RuntimeError"},
                {"message", "boom"},
                {"run_id", "r-2"}}));
  auto no_history = [](const TestResult& r) { return std::vector<TestResult>{r}; };
  EXPECT_TRUE(promotions(run, no_history, 1).empty());
}

TEST(Rebucket, PromotionNeedsCleanPassesInTheLastNRuns) {
  TestResult xpass = result("TestViewOps::test_t", "test_t_privateuseone", "xfail", "xpassed");
  TestResult strict = result("TestViewOps::test_s", "test_s_privateuseone", "xfail_strict",
                             "failed", "XPASS(strict)", "[XPASS(strict)] ootci plan");
  TestResult once = result("TestViewOps::test_o", "test_o_privateuseone", "xfail", "xpassed");
  TestResult mixed = result("TestViewOps::test_m", "test_m_privateuseone", "xfail", "xpassed");
  TestResult rerun = result("TestViewOps::test_r", "test_r_privateuseone", "xfail", "xpassed");
  TestResult still = result("TestViewOps::test_f", "test_f_privateuseone", "xfail", "xfailed");
  std::map<std::string, std::vector<TestResult>> history = {
      {xpass.test_id,
       {xpass,
        result("TestViewOps::test_t", "test_t_privateuseone", "mandatory_success", "passed")}},
      {strict.test_id,
       {strict, result("TestViewOps::test_s", "test_s_privateuseone", "xfail", "xpassed")}},
      {once.test_id, {once}},
      {mixed.test_id,
       {mixed, result("TestViewOps::test_m", "test_m_privateuseone", "xfail", "xfailed")}},
      {rerun.test_id,
       {rerun, result("TestViewOps::test_r", "test_r_privateuseone", "mandatory_success", "passed",
                      "", "", true)}},
      {still.test_id, {still, still}},
  };
  auto lookup = [&](const TestResult& r) { return history.at(r.test_id); };
  std::vector<Move> moves = promotions({xpass, strict, once, mixed, rerun, still}, lookup, 2);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].test_id, strict.test_id);
  EXPECT_EQ(moves[0].from, TestMode::kXfailStrict);
  EXPECT_EQ(moves[0].to, TestMode::kMandatorySuccess);
  EXPECT_EQ(moves[0].base, "TestViewOps::test_s");
  EXPECT_EQ(moves[0].variant, "test_s_privateuseone");
  EXPECT_EQ(moves[0].reason,
            "mandatory_success: promoted from xfail_strict: passed in the last 2 runs it ran in");
  EXPECT_EQ(moves[1].test_id, xpass.test_id);
  // With N = 1 the run alone is enough, but never a rerun-only pass or a failure.
  moves = promotions({xpass, strict, once, mixed, rerun, still}, lookup, 1);
  EXPECT_EQ(moves.size(), 5u);
}

VariantEvidence seen_variant(const std::string& name, const std::string& dtype,
                             std::vector<std::string> ops, const std::string& outcome = "failed") {
  VariantEvidence v;
  v.name = name;
  v.test_id = kViewOpsFile + "::TestViewOpsPRIVATEUSEONE::" + name;
  v.dtype = dtype;
  v.ops = std::move(ops);
  TestResult r;
  r.test_id = v.test_id;
  r.outcome = *parse_outcome(outcome);
  r.mode = TestMode::kMandatorySuccess;
  v.results.push_back(r);
  return v;
}

NameDecision decision(const std::string& name, TestMode mode, const std::string& reason,
                      std::vector<std::string> dtypes_exclude = {}) {
  NameDecision d;
  d.name = name;
  d.mode = mode;
  d.reason = reason;
  d.dtypes_exclude = std::move(dtypes_exclude);
  return d;
}

ConfigState view_ops_state() {
  ConfigState s;
  s.relpath = kViewOpsFile;
  s.evidence.relpath = kViewOpsFile;
  s.evidence.bases = {
      {"TestViewOps::test_crash",
       {seen_variant("test_crash_privateuseone", "", {"aten::view", "aten::conj"}, "error")}},
      {"TestViewOps::test_mixed",
       {seen_variant("test_mixed_privateuseone_complex64", "complex64", {"aten::view"}),
        seen_variant("test_mixed_privateuseone_float32", "float32", {"aten::view"}, "passed")}},
      {"TestViewOps::test_t",
       {seen_variant("test_t_privateuseone_float32", "float32",
                     {"aten::transpose.int", "aten::view"}),
        seen_variant("test_t_privateuseone_int64", "int64",
                     {"aten::transpose.int", "aten::view", "aten::add.Tensor"}),
        seen_variant("test_t_privateuseone_bool", "bool", {}, "skipped")}},
  };
  s.generated = {
      decision("TestViewOps::test_crash", TestMode::kSkip,
               "skip: crashes the test process with SIGSEGV in 1 of 1 run"),
      decision("TestViewOps::test_mixed", TestMode::kMandatorySuccess,
               "mandatory_success: passed in 1 of 1 run; excluded dtype complex64: "
               "aten::view_as_real is not implemented on the device",
               {"complex64"}),
      decision("TestViewOps::test_t", TestMode::kXfail,
               "xfail: aten::transpose.int is not implemented on the device (NotImplementedError: "
               "Could not run 'aten::transpose.int')"),
  };
  return s;
}

TEST(Rebucket, ANewlySupportedOpAdmitsTheVariantsWhoseOpsAreAllSupported) {
  ConfigState s = view_ops_state();
  Capabilities caps;
  caps.supported_ops = {"aten::view", "aten::conj"};
  EXPECT_TRUE(admissions(s, caps, {}).empty());  // no op named in a reason has a kernel yet

  caps.supported_ops.insert("aten::transpose.int");
  std::vector<Move> moves = admissions(s, caps, {});
  ASSERT_EQ(moves.size(), 1u);  // int64 also calls aten::add.Tensor; bool recorded nothing
  EXPECT_EQ(moves[0].kind, Move::kAdmit);
  EXPECT_EQ(moves[0].variant, "test_t_privateuseone_float32");
  EXPECT_EQ(moves[0].from, TestMode::kXfail);
  EXPECT_EQ(moves[0].reason,
            "mandatory_success: admitted: aten::transpose.int now has a device kernel, and so "
            "does every op it calls");
  EXPECT_TRUE(admissions(s, caps, {moves[0].test_id}).empty());

  // An excluded dtype whose reason names the op is admitted as well.
  caps.supported_ops.insert("aten::view_as_real");
  moves = admissions(s, caps, {});
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].variant, "test_mixed_privateuseone_complex64");
  EXPECT_EQ(moves[0].from, TestMode::kSkip);
}

Move promotion(const std::string& base, const std::string& variant) {
  Move m;
  m.relpath = kViewOpsFile;
  m.base = base;
  m.variant = variant;
  m.test_id = kViewOpsFile + "::" + split_base(base).first + "PRIVATEUSEONE::" + variant;
  m.reason = "mandatory_success: promoted from xfail: passed in the last 2 runs it ran in";
  return m;
}

TEST(Rebucket, MovesRewriteAWholeEntryOrAWholeDtypeAndNeverNameAVariant) {
  ConfigState s = view_ops_state();
  Move all = promotion("TestViewOps::test_crash", "test_crash_privateuseone");
  Move one = promotion("TestViewOps::test_t", "test_t_privateuseone_float32");
  Move excluded = promotion("TestViewOps::test_mixed", "test_mixed_privateuseone_complex64");
  AppliedMoves applied = apply_moves(s, {all, one, excluded});
  EXPECT_EQ(applied.written, 3u);
  EXPECT_TRUE(applied.not_written.empty());
  const std::vector<NameDecision>& after = applied.decisions;
  ASSERT_EQ(after.size(), 4u);
  for (const auto& d : after) EXPECT_TRUE(s.evidence.find(d.name)) << d.name;  // bases only
  EXPECT_EQ(after[0].name, "TestViewOps::test_crash");
  EXPECT_EQ(after[0].mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(after[0].reason, all.reason);
  // The admitted dtype comes off the exclusions and runs in the entry's mode.
  EXPECT_TRUE(after[1].dtypes_exclude.empty());
  EXPECT_EQ(
      after[1].reason,
      "mandatory_success: passed in 1 of 1 run; dtype complex64 runs again: " + excluded.reason);
  EXPECT_EQ(after[2].mode, TestMode::kXfail);  // test_t: int64 still fails
  EXPECT_EQ(after[3].name, "TestViewOps::test_t");
  EXPECT_EQ(after[3].dtypes_include, std::vector<std::string>{"float32"});
  EXPECT_EQ(after[3].mode, TestMode::kMandatorySuccess);

  DecisionIndex index(after);
  const auto& t = s.evidence.bases[2];
  EXPECT_EQ(index.mode(t.base, t.variants[0]), TestMode::kMandatorySuccess);
  EXPECT_EQ(index.mode(t.base, t.variants[1]), TestMode::kXfail);
  const auto& m = s.evidence.bases[1];
  EXPECT_EQ(index.mode(m.base, m.variants[0]), TestMode::kMandatorySuccess);

  // Written out, the restricted entry comes first, so Spyre (and the plan) pick it for float32.
  std::string path = make_temp_dir() + "/test_view_ops.yaml";
  write_file(path, render_config(kViewOpsFile, {"unit"}, after, nullptr, false));
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  const auto& rules = parsed.config.files[0].rules;
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].method, "test_t");
  EXPECT_EQ(rules[0].dtypes_include.size(), 1u);

  // A second move of the same variant moves the restricted entry, all of whose variants it is.
  ConfigState again = s;
  again.generated = read_existing_config(path).generated;
  one.reason = "mandatory_success: admitted: x";
  AppliedMoves twice = apply_moves(again, {one});
  EXPECT_EQ(twice.written, 1u);
  ASSERT_EQ(twice.decisions.size(), 4u);
  EXPECT_EQ(twice.decisions[0].dtypes_include, std::vector<std::string>{"float32"});
  EXPECT_EQ(twice.decisions[0].reason, "mandatory_success: admitted: x");
}

TEST(Rebucket, AMoveNoConfigCanNameAloneIsNotWritten) {
  // Two classes share test_q, one mode for float32: promoting one class's variant would take the
  // other's (still failing) along.
  ConfigState s;
  s.relpath = s.evidence.relpath = kViewOpsFile;
  auto failing = [](const std::string& cls) {
    VariantEvidence v = seen_variant("test_q_privateuseone_float32", "float32", {}, "failed");
    v.test_id = kViewOpsFile + "::" + cls + "PRIVATEUSEONE::" + v.name;
    v.results[0].test_id = v.test_id;
    return v;
  };
  s.evidence.bases = {{"TestA::test_q", {failing("TestA")}}, {"TestB::test_q", {failing("TestB")}}};
  s.generated = {decision("TestA::test_q", TestMode::kXfail, "xfail: fails in every run"),
                 decision("TestB::test_q", TestMode::kXfail, "xfail: fails in every run")};
  Move a = promotion("TestA::test_q", "test_q_privateuseone_float32");
  AppliedMoves applied = apply_moves(s, {a});
  EXPECT_EQ(applied.written, 0u);
  ASSERT_EQ(applied.not_written.size(), 1u);
  EXPECT_EQ(applied.not_written[0].second,
            "a config names no single variant, and the moved variants are not all of an entry's "
            "or of a dtype's");
  EXPECT_EQ(applied.decisions[0].mode, TestMode::kXfail);
  EXPECT_EQ(applied.decisions.size(), 2u);
  // Both move: the entry (both names) moves.
  applied = apply_moves(s, {a, promotion("TestB::test_q", "test_q_privateuseone_float32")});
  EXPECT_EQ(applied.written, 2u);
  EXPECT_EQ(applied.decisions[0].mode, TestMode::kMandatorySuccess);
  EXPECT_EQ(applied.decisions[1].mode, TestMode::kMandatorySuccess);
}

TEST(Rebucket, MovesAHumanEntryDecidesArePrintedNotWritten) {
  ConfigState s = view_ops_state();
  Rule r;
  r.class_name = "TestViewOps";
  r.method = "test_t.*";
  s.human_rules = {r};
  Move m;
  m.relpath = kViewOpsFile;
  m.base = "TestViewOps::test_t";
  m.variant = "test_t_privateuseone_float32";
  Move other = m;
  other.base = "TestViewOps::test_crash";
  other.variant = "test_crash_privateuseone";
  std::vector<Move> moves = {m, other};
  mark_human(s, moves);
  EXPECT_TRUE(moves[0].human);
  EXPECT_FALSE(moves[1].human);
  std::vector<NameDecision> after = apply_moves(s, moves).decisions;
  EXPECT_EQ(after.size(), 3u);
  EXPECT_EQ(after[2].mode, TestMode::kXfail);
  // A person's entry owns its method in every class, as Spyre drops the class.
  s.human_rules[0].class_name = "TestOther";
  mark_human(s, moves);
  EXPECT_TRUE(moves[0].human);
}

}  // namespace
}  // namespace ootci
