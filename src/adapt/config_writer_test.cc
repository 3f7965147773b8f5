#include "adapt/config_writer.h"

#include <gtest/gtest.h>

#include <regex>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

NameDecision name(const std::string& n, TestMode mode, const std::string& reason,
                  std::vector<std::string> dtypes_exclude = {},
                  std::vector<std::string> dtypes_include = {},
                  std::vector<std::string> ops_exclude = {}) {
  NameDecision d;
  d.name = n;
  d.mode = mode;
  d.reason = reason;
  d.dtypes_exclude = std::move(dtypes_exclude);
  d.dtypes_include = std::move(dtypes_include);
  d.ops_exclude = std::move(ops_exclude);
  return d;
}

const std::vector<std::string> kUnit = {"unit"};

std::vector<NameDecision> proposal() {
  return {
      name("TestViewOps::test_view", TestMode::kMandatorySuccess,
           "mandatory_success: passed in 1 of 1 run"),
      name("TestViewOps::test_t_view", TestMode::kXfail,
           "xfail: aten::transpose.int is not implemented on the device (NotImplementedError: "
           "Could not run 'aten::transpose.int' on the reference backend)"),
      name("TestOldViewOps::test_T", TestMode::kMandatorySuccess,
           "mandatory_success: passed in 1 of 1 run"),
      name("TestViewOps::test_conj_view", TestMode::kSkip,
           "skip: crashes the test process with SIGSEGV in 1 of 1 run"),
      name("TestOldViewOps::test_transposes", TestMode::kMandatorySuccess,
           "mandatory_success: passed in every run; excluded dtype complex64 and op conj: crashes "
           "the test process with SIGSEGV in every run",
           {"complex64"}, {}, {"conj"}),
      name("TestOldViewOps::test_transposes", TestMode::kXfail,
           "xfail: for complex128: dtype complex128 is not supported on the device", {},
           {"complex128"}),
  };
}

const char* kGolden =
    R"(# Proposed by `ootci select propose` from execution evidence (docs/select.md). An entry
# under a `# ootci:` comment is rewritten by the next proposal; delete that comment line to
# make the entry yours: ootci then keeps it as written and leaves its tests alone.
test_suite_config:
  labels: [unit]
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      unlisted_test_mode: skip
      tests:
        # ootci: xfail: for complex128: dtype complex128 is not supported on the device
        - names:
            - TestOldViewOps::test_transposes
          mode: xfail  # xfail: for complex128: dtype complex128 is not supported on the device
          edits:
            dtypes:
              include:
                - name: complex128
        # ootci: mandatory_success: passed in 1 of 1 run
        - names:
            - TestOldViewOps::test_T
            - TestViewOps::test_view
          mode: mandatory_success
        # ootci: mandatory_success: passed in every run; excluded dtype complex64 and op conj:
        #        crashes the test process with SIGSEGV in every run
        - names:
            - TestOldViewOps::test_transposes
          mode: mandatory_success
          edits:
            ops:
              exclude:
                - name: conj
            dtypes:
              exclude:
                - name: complex64
        # ootci: xfail: aten::transpose.int is not implemented on the device (NotImplementedError:
        #        Could not run 'aten::transpose.int' on the reference backend)
        - names:
            - TestViewOps::test_t_view
          mode: xfail  # xfail: aten::transpose.int is not implemented on the device
        # ootci: skip: crashes the test process with SIGSEGV in 1 of 1 run
        - names:
            - TestViewOps::test_conj_view
          mode: skip  # skip: crashes the test process with SIGSEGV in 1 of 1 run
)";

TEST(ConfigWriter, NewFileGolden) {
  std::string text = render_config("test/test_view_ops.py", kUnit, proposal(), nullptr, false);
  EXPECT_EQ(text, kGolden);
  EXPECT_EQ(entry_count(proposal()), 5u);
}

TEST(ConfigWriter, NamesAreBasesAndADtypeEntryComesBeforeItsMethodsOther) {
  std::string path = make_temp_dir() + "/test_view_ops.yaml";
  write_file(path, render_config("test/test_view_ops.py", kUnit, proposal(), nullptr, false));
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  ASSERT_EQ(parsed.config.files.size(), 1u);
  EXPECT_EQ(parsed.config.labels, kUnit);
  EXPECT_EQ(parsed.config.files[0].path, "${TORCH_ROOT}/test/test_view_ops.py");
  EXPECT_EQ(parsed.config.files[0].unlisted_test_mode, TestMode::kSkip);
  const auto& rules = parsed.config.files[0].rules;
  ASSERT_EQ(rules.size(), 6u);
  // Spyre picks, among a method's entries, the first whose dtypes.include holds the variant's
  // dtype: the restricted entry is written first (with global dtypes, the unrestricted one would
  // hold it too).
  EXPECT_EQ(rules[0].method, "test_transposes");
  ASSERT_EQ(rules[0].dtypes_include.size(), 1u);
  EXPECT_EQ(rules[0].dtypes_include[0].name, "complex128");
  EXPECT_EQ(rules[0].mode, TestMode::kXfail);
  EXPECT_EQ(rules[3].method, "test_transposes");
  EXPECT_EQ(rules[3].mode, TestMode::kMandatorySuccess);
  std::regex identifier(R"(\w+)");
  for (const auto& r : rules) EXPECT_TRUE(std::regex_match(r.method, identifier)) << r.method;

  // Read back: the same decisions, reasons joined from their wrapped lines.
  ExistingConfig back = read_existing_config(path);
  EXPECT_EQ(back.human_entries, 0u);
  EXPECT_TRUE(back.human_rules.empty());
  EXPECT_EQ(back.labels, kUnit);
  std::vector<NameDecision> expected = proposal();
  ASSERT_EQ(back.generated.size(), expected.size());
  EXPECT_TRUE(diff_decisions(expected, back.generated).empty());
  EXPECT_EQ(back.generated[3].reason, expected[4].reason);
  EXPECT_EQ(back.layout.entries[2].reason, expected[4].reason);
}

TEST(ConfigWriter, AToleranceProposalIsThePrecisionOfItsIncludedDtype) {
  NameDecision f32 = name("TestBinaryUfuncs::test_rdiv", TestMode::kMandatorySuccess,
                          "mandatory_success: for float32: fails only by a numeric mismatch", {},
                          {"float16", "float32"});
  f32.dtype_precision["float32"] = Precision{1e-05, 0.0043};
  std::vector<NameDecision> decisions = {
      f32, name("TestBinaryUfuncs::test_rdiv", TestMode::kMandatorySuccess,
                "mandatory_success: passed in every run")};
  std::string path = make_temp_dir() + "/test_binary_ufuncs.yaml";
  std::string text = render_config("test/test_binary_ufuncs.py", kUnit, decisions, nullptr, false);
  EXPECT_NE(text.find("              include:\n"
                      "                - name: float16\n"
                      "                - name: float32\n"
                      "                  precision:\n"
                      "                    atol: 1e-05\n"
                      "                    rtol: 0.0043\n"),
            std::string::npos)
      << text;
  write_file(path, text);
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  const auto& include = parsed.config.files[0].rules[0].dtypes_include;
  ASSERT_EQ(include.size(), 2u);
  EXPECT_FALSE(include[0].precision);
  ASSERT_TRUE(include[1].precision);
  EXPECT_EQ(*include[1].precision, (Precision{1e-05, 0.0043}));

  // Read back, the precision is part of the entry: a new one is a change to it.
  ExistingConfig back = read_existing_config(path);
  EXPECT_TRUE(diff_decisions(decisions, back.generated).empty());
  decisions[0].dtype_precision["float32"].rtol = 0.005;
  EXPECT_EQ(diff_decisions(back.generated, decisions).changed.size(), 1u);
}

TEST(ConfigWriter, LabelsComeFromSelectLabelsAndAnExistingFileKeepsItsOwn) {
  std::string path = make_temp_dir() + "/t.yaml";
  std::string text = render_config("test/test_x.py", {"unit", "trunk"}, proposal(), nullptr, false);
  EXPECT_NE(text.find("\n  labels: [unit, trunk]\n"), std::string::npos) << text;
  write_file(path, text);
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  EXPECT_EQ(parsed.config.labels, (std::vector<std::string>{"unit", "trunk"}));
  // A person's labels stay when the file is rewritten with another vocabulary.
  ExistingConfig existing = read_existing_config(path);
  EXPECT_EQ(existing.labels, (std::vector<std::string>{"unit", "trunk"}));
  EXPECT_EQ(render_config("test/test_x.py", {"integration"}, proposal(), &existing, false), text);
}

TEST(ConfigWriter, AWrappedReasonIsOneReasonAndOtherCommentsAreNotPartOfIt) {
  std::string path = make_temp_dir() + "/t.yaml";
  std::string reason = "xfail: " + std::string(60, 'a') + " " + std::string(60, 'b') + " " +
                       std::string(150, 'c') + " d";
  std::string text = render_config(
      "test/test_x.py", kUnit, {name("TestX::test_a", TestMode::kXfail, reason)}, nullptr, false);
  EXPECT_NE(text.find("        #        " + std::string(150, 'c') + "\n        #        d\n"),
            std::string::npos)
      << text;  // a word longer than the line is not cut
  write_file(path, text);
  EXPECT_EQ(read_existing_config(path).generated[0].reason, reason);
  // A person's note under the marker, written at another indentation, is left out of the reason.
  size_t at = text.find("        - names:");
  write_file(path, text.substr(0, at) + "        # see ISSUE-3\n" + text.substr(at));
  EXPECT_EQ(read_existing_config(path).generated[0].reason, reason);
}

TEST(ConfigWriter, EmptyProposalWritesAnEmptyListThatValidates) {
  std::string path = make_temp_dir() + "/t.yaml";
  write_file(path, render_config("test/test_x.py", kUnit, {}, nullptr, false));
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  ExistingConfig back = read_existing_config(path);
  EXPECT_TRUE(back.layout.entries.empty());
  EXPECT_EQ(render_config("test/test_x.py", kUnit, {}, &back, false), read_file(path));
}

// A file ootci wrote, then edited by hand: a human entry between generated ones, a generated
// entry adopted (its `# ootci:` line deleted), a regex name, a global section, and a trailing
// comment.
const char* kHandEdited = R"(# Reviewed by the device team.
test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      unlisted_test_mode: skip
      tests:
        # ootci: mandatory_success: passed in 1 of 1 run
        - names:
            - TestOldViewOps::test_T
            - TestViewOps::test_view
          mode: mandatory_success

        # Our kernel for this is being rewritten (ISSUE-12).
        # Keep it skipped until then.
        - names: [TestViewOps::test_t_view]
          mode: skip   # not xfail: it is slow
        # ootci: skip: crashes the test process with SIGSEGV in 1 of 1 run
        - names:
            - TestViewOps::test_conj_view
          mode: skip
        # adopted: we know why
        - names:
            - TestOldViewOps::test_transposes
          mode: mandatory_success
          edits:
            dtypes:
              exclude:
                - name: complex64
                - name: complex128
        - names: ['TestViewOps::test_view_as_.*']
          mode: xfail
        # end of list
  global:
    supported_dtypes: [{name: float32}, {name: complex64}]
)";

TEST(ConfigWriter, HumanEntriesAreKeptVerbatimAndTheirTestsLeftAlone) {
  std::string path = make_temp_dir() + "/test_view_ops.yaml";
  write_file(path, kHandEdited);
  ExistingConfig existing = read_existing_config(path);
  EXPECT_EQ(existing.human_entries, 3u);
  EXPECT_EQ(existing.generated.size(), 3u);
  ASSERT_EQ(existing.human_rules.size(), 3u);
  EXPECT_EQ(existing.human_rules[2].method, "test_view_as_.*");

  std::vector<NameDecision> fresh = proposal();
  NameDecision real = name("TestViewOps::test_view_as_real", TestMode::kMandatorySuccess,
                           "mandatory_success: passed in 1 of 1 run");
  fresh.push_back(real);
  std::vector<NameDecision> kept = without_human(fresh, existing.human_rules);
  std::vector<std::string> names;
  for (const auto& d : kept) names.push_back(d.name);
  // test_t_view, test_transposes (and its variant's name) and test_view_as_real are people's.
  EXPECT_EQ(names, (std::vector<std::string>{"TestViewOps::test_view", "TestOldViewOps::test_T",
                                             "TestViewOps::test_conj_view"}));

  std::string text = render_config("test/test_view_ops.py", kUnit, kept, &existing, false);
  EXPECT_EQ(text, R"(# Reviewed by the device team.
test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      unlisted_test_mode: skip
      tests:
        # ootci: mandatory_success: passed in 1 of 1 run
        - names:
            - TestOldViewOps::test_T
            - TestViewOps::test_view
          mode: mandatory_success
        # ootci: skip: crashes the test process with SIGSEGV in 1 of 1 run
        - names:
            - TestViewOps::test_conj_view
          mode: skip  # skip: crashes the test process with SIGSEGV in 1 of 1 run

        # Our kernel for this is being rewritten (ISSUE-12).
        # Keep it skipped until then.
        - names: [TestViewOps::test_t_view]
          mode: skip   # not xfail: it is slow
        # adopted: we know why
        - names:
            - TestOldViewOps::test_transposes
          mode: mandatory_success
          edits:
            dtypes:
              exclude:
                - name: complex64
                - name: complex128
        - names: ['TestViewOps::test_view_as_.*']
          mode: xfail
        # end of list
  global:
    supported_dtypes: [{name: float32}, {name: complex64}]
)");
  write_file(path, text);
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  EXPECT_TRUE(parsed.warnings.empty()) << parsed.warnings[0];

  // Rewriting the rewritten file changes nothing.
  ExistingConfig again = read_existing_config(path);
  EXPECT_EQ(render_config("test/test_view_ops.py", kUnit, without_human(fresh, again.human_rules),
                          &again, false),
            text);

  // --overwrite-human: people's entries go, and their tests get generated entries.
  std::string overwritten = render_config("test/test_view_ops.py", kUnit, fresh, &again, true);
  EXPECT_EQ(overwritten.find("ISSUE-12"), std::string::npos);
  EXPECT_NE(overwritten.find("            - TestViewOps::test_t_view\n          mode: xfail"),
            std::string::npos)
      << overwritten;
  EXPECT_NE(overwritten.find("supported_dtypes: [{name: float32}"), std::string::npos);
}

TEST(ConfigWriter, APersonsEntryOwnsItsMethodInEveryClass) {
  // Spyre drops the class: a person's TestOther::test_view decides TestViewOps::test_view too.
  Rule other;
  other.class_name = "TestOther";
  other.method = "test_view";
  Rule pattern;
  pattern.method = "test_t.*";
  std::vector<NameDecision> kept = without_human(proposal(), {other, pattern});
  std::vector<std::string> names;
  for (const auto& d : kept) names.push_back(d.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"TestOldViewOps::test_T", "TestViewOps::test_conj_view"}));
  EXPECT_TRUE(human_owns({other}, "TestViewOps::test_view"));
  EXPECT_FALSE(human_owns({other}, "TestViewOps::test_view_as_real"));
}

TEST(ConfigWriter, APersonNamingAGeneratedTestAgainWins) {
  std::string path = make_temp_dir() + "/t.yaml";
  std::string generated =
      render_config("test/test_x.py", kUnit, {name("TestX::test_a", TestMode::kXfail, "xfail: x")},
                    nullptr, false);
  // As a file this names TestX::test_a twice with different modes: the first would win...
  write_file(path, generated + "        - names: [TestX::test_a]\n          mode: skip\n");
  SuiteConfigResult both = load_suite_config(path);
  ASSERT_EQ(both.warnings.size(), 1u);
  EXPECT_NE(both.warnings[0].find("the first one wins"), std::string::npos) << both.warnings[0];
  // ...but the rewrite keeps the person's entry only.
  ExistingConfig existing = read_existing_config(path);
  ASSERT_EQ(existing.human_rules.size(), 1u);
  EXPECT_EQ(existing.human_rules[0].mode, TestMode::kSkip);
  ASSERT_EQ(existing.generated.size(), 1u);
  EXPECT_EQ(existing.generated[0].reason, "xfail: x");
  std::vector<NameDecision> kept =
      without_human({name("TestX::test_a", TestMode::kXfail, "xfail: x")}, existing.human_rules);
  EXPECT_TRUE(kept.empty());
  write_file(path, render_config("test/test_x.py", kUnit, kept, &existing, false));
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  ASSERT_EQ(parsed.config.files[0].rules.size(), 1u);
  EXPECT_EQ(parsed.config.files[0].rules[0].mode, TestMode::kSkip);
}

TEST(ConfigWriter, ListsIndentedLikeTheKeyAreEditedInPlace) {
  std::string path = make_temp_dir() + "/t.yaml";
  write_file(path, R"(test_suite_config:
  files:
  - path: ${TORCH_ROOT}/test/test_x.py
    tests:
    - names: [TestX::test_mine]
      mode: xfail
    - names: [TestX::test_b]   # ootci: not a marker, the comment must lead the entry
      mode: skip
)");
  ExistingConfig existing = read_existing_config(path);
  EXPECT_EQ(existing.layout.item_indent, "    ");
  EXPECT_EQ(existing.human_entries, 2u);
  std::string text =
      render_config("test/test_x.py", kUnit,
                    {name("TestX::test_a", TestMode::kMandatorySuccess, "mandatory_success: ok")},
                    &existing, false);
  EXPECT_EQ(text, R"(test_suite_config:
  files:
  - path: ${TORCH_ROOT}/test/test_x.py
    tests:
    # ootci: mandatory_success: ok
    - names:
        - TestX::test_a
      mode: mandatory_success
    - names: [TestX::test_mine]
      mode: xfail
    - names: [TestX::test_b]   # ootci: not a marker, the comment must lead the entry
      mode: skip
)");
  write_file(path, text);
  EXPECT_TRUE(load_suite_config(path).ok());
}

TEST(ConfigWriter, LayoutsOotciCannotEditAreRefused) {
  EXPECT_THROW(split_config("a.yaml",
                            "test_suite_config:\n  files:\n    - path: x\n      tests: "
                            "[{names: [a]}]\n"),
               Error);
  try {
    split_config("b.yaml",
                 "test_suite_config:\n  files:\n    - path: x\n      tests:\n    - path: y\n"
                 "      tests:\n");
    FAIL() << "two lists";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "b.yaml: expected one `tests:` list (one upstream file per config), found 2");
  }
  std::string path = make_temp_dir() + "/bad.yaml";
  write_file(path,
             "test_suite_config:\n  files:\n    - path: x\n      tests:\n        - names: "
             "[a]\n          mode: xfial\n");
  try {
    read_existing_config(path);
    FAIL() << "invalid config";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a valid test-suite config, so it is left alone"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("unknown mode 'xfial'"), std::string::npos) << e.what();
  }
}

TEST(ConfigWriter, AReasonIsOneLineOnTheMarkerAndShortOnTheMode) {
  std::string path = make_temp_dir() + "/q.yaml";
  NameDecision odd = name("TestX::test_a", TestMode::kXfail, "xfail: odd #1\nsecond line (E: x)");
  write_file(path, render_config("test/test_x.py", kUnit, {odd}, nullptr, false));
  std::string text = read_file(path);
  EXPECT_NE(text.find("# ootci: xfail: odd #1 second line (E: x)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("          mode: xfail  # xfail: odd #1 second line\n"), std::string::npos)
      << text;
  SuiteConfigResult parsed = load_suite_config(path);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0];
  EXPECT_EQ(parsed.config.files[0].rules[0].mode, TestMode::kXfail);
}

TEST(ConfigWriter, FileNamesAndDiffs) {
  EXPECT_EQ(config_file_name("test/test_view_ops.py"), "test_view_ops.yaml");
  EXPECT_EQ(config_file_name("test/nn/test_pooling.py"), "nn.test_pooling.yaml");
  std::vector<NameDecision> before = {name("A::a", TestMode::kXfail, "xfail: x"),
                                      name("A::b", TestMode::kSkip, "skip: y")};
  std::vector<NameDecision> after = {name("A::a", TestMode::kMandatorySuccess, "ok"),
                                     name("A::c", TestMode::kSkip, "skip: y")};
  ConfigDiff diff = diff_decisions(before, after);
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0].name, "A::c");
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_EQ(diff.changed[0].before->mode, TestMode::kXfail);
  EXPECT_EQ(diff.changed[0].after->mode, TestMode::kMandatorySuccess);
  ASSERT_EQ(diff.removed.size(), 1u);
  EXPECT_EQ(diff.removed[0].name, "A::b");
  // A method's dtype-restricted entry is another name to a diff.
  NameDecision complex = name("A::a", TestMode::kXfail, "xfail: z", {}, {"complex64"});
  EXPECT_EQ(display_name(complex), "A::a [complex64]");
  diff = diff_decisions(after, {after[0], complex, after[1]});
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0].name, "A::a [complex64]");
  EXPECT_TRUE(diff.changed.empty());
}

}  // namespace
}  // namespace ootci
