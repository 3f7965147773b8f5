#include "relay/allowlist_edit.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/yaml_doc.h"
#include "relay/allowlist.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string edit_error(const std::string& text, const std::string& repo) {
  try {
    demote_in_allowlist(text, repo, "allowlist.yml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The real pytorch/pytorch file: its only L3 repo moves, its group (and the group's comment)
// goes, everything else stays byte for byte.
TEST(AllowlistEdit, TheRealFileLosesItsOnlyL3GroupAndL2GainsTheRepo) {
  std::string before = read_file(fixture_path("crcr/allowlist.yml"));
  std::string after = demote_in_allowlist(before, "pytorch/crcr-test");
  std::string expected = before;
  expected.replace(expected.find("  - vllm-project/vllm\n"), 22,
                   "  - vllm-project/vllm\n  - pytorch/crcr-test\n");
  expected.erase(expected.find("  # Canonical test repos for CRCR.\n"));
  EXPECT_EQ(after, expected);
  Allowlist a = Allowlist::parse(load_yaml_text("after.yml", after));
  EXPECT_EQ(a.level_of("pytorch/crcr-test"), Level::kL2);
  EXPECT_TRUE(a.find("pytorch/crcr-test")->oncalls.empty());
  EXPECT_EQ(a.entries().size(), 10u);
}

TEST(AllowlistEdit, AnEntryLeavesItsGroupWithItsCommentsAndEventsStay) {
  const std::string before =
      "L2:\n"
      "    - a/two  # trailing comment\n"
      "    - b/two\n"
      "\n"
      "# The stable ones.\n"
      "L3:\n"
      "  npu:\n"
      "    # Ascend's staging repo, asked for by @x.\n"
      "    # Second line.\n"
      "    acme/npu-staging:\n"
      "      oncalls: [x, y]\n"
      "      events: [nightly]\n"
      "    acme/npu: [z]\n"
      "\n"
      "  # The gpu group.\n"
      "  gpu:\n"
      "    acme/gpu: [w]\n"
      "L4:\n"
      "  - acme/four\n";
  const std::string after =
      "L2:\n"
      "    - a/two  # trailing comment\n"
      "    - b/two\n"
      "    # Ascend's staging repo, asked for by @x.\n"
      "    # Second line.\n"
      "    - acme/npu-staging: {events: [nightly]}\n"
      "\n"
      "# The stable ones.\n"
      "L3:\n"
      "  npu:\n"
      "    acme/npu: [z]\n"
      "\n"
      "  # The gpu group.\n"
      "  gpu:\n"
      "    acme/gpu: [w]\n"
      "L4:\n"
      "  - acme/four\n";
  EXPECT_EQ(demote_in_allowlist(before, "acme/npu-staging"), after);
  Allowlist a = Allowlist::parse(load_yaml_text("after.yml", after));
  EXPECT_EQ(a.find("acme/npu-staging")->events, std::vector<std::string>{"nightly"});
  // The last repo of a group in the middle: the group and its own comment go, one blank stays.
  EXPECT_EQ(demote_in_allowlist(before, "acme/gpu"),
            "L2:\n    - a/two  # trailing comment\n    - b/two\n    - acme/gpu\n\n"
            "# The stable ones.\nL3:\n  npu:\n    # Ascend's staging repo, asked for by @x.\n"
            "    # Second line.\n    acme/npu-staging:\n      oncalls: [x, y]\n"
            "      events: [nightly]\n    acme/npu: [z]\n\nL4:\n  - acme/four\n");
  // A name CRCR trims is found by its trimmed name and moved under it.
  EXPECT_EQ(demote_in_allowlist("L2:\nL3:\n  d:\n    'acme/x/': [a]\n", "acme/x"),
            "L2:\n  - acme/x\nL3:\n");
}

TEST(AllowlistEdit, WhatCannotBeEditedMinimallyIsRefusedWithTheReason) {
  EXPECT_EQ(edit_error("L2: [a/b]\nL3:\n  d:\n    c/d: [x]\n", "c/d"),
            "allowlist.yml: L2 must be in block style (line 1)");
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3: {d: {c/d: [x]}}\n", "c/d"),
            "allowlist.yml: L3 must be in block style (line 3)");
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3:\n  d:\n    c/d: [x]\nL3:\n  e:\n    e/f: [y]\n", "e/f"),
            "allowlist.yml: expected one top-level L3 key, found 2 (lines 3, 6)");
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3:\n  d:\n    c/d: [x]\n    c/d: [y]\n", "c/d"),
            "allowlist.yml:6:5: L3.d.c/d: 'c/d' is already listed at allowlist.yml:5:5");
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3:\n  d: {c/d: [x]}\n", "c/d"),
            "allowlist.yml: expected one line for 'c/d', found 0");
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3:\n  d:\n    c/d: [x]\n", "e/f"),
            "allowlist.yml: e/f is not at L3");
  EXPECT_EQ(edit_error("L3:\n  d:\n    c/d: [x]\n", "c/d"),
            "allowlist.yml: expected one top-level L2 key, found 0");
  // L2's items at column 0: the new one would land elsewhere; what comes out is refused.
  EXPECT_EQ(edit_error("L2:\n- a/b\nL3:\n  d:\n    c/d: [x]\n", "c/d")
                .rfind("allowlist.yml: the edited allowlist is not valid YAML: ", 0),
            0u);
  // An allowlist the relay would refuse is not edited either.
  EXPECT_EQ(edit_error("L2:\n  - a/b\nL3:\n  d:\n    c/d: [x]\n  d2:\n    c/d: [y]\n", "c/d"),
            "allowlist.yml:7:5: L3.d2.c/d: 'c/d' is already listed at allowlist.yml:5:5");
}

}  // namespace
}  // namespace ootci
