#include "select/test_hashes.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

TreeHashes tree(std::map<std::string, std::string> tests,
                std::map<std::string, std::string> helpers) {
  TreeHashes t;
  t.tests = std::move(tests);
  t.helpers = std::move(helpers);
  return t;
}

TEST(CompareTrees, CountsNewChangedRemovedAndUnchangedPerFile) {
  TreeHashes from = tree({{"test/a.py::C::test_same", "1"},
                          {"test/a.py::C::test_edited", "2"},
                          {"test/a.py::C::test_gone", "3"},
                          {"test/b.py::test_x", "4"},
                          {"test/b.py::test_y", "5"},
                          {"test/old.py::test_z", "6"}},
                         {{"test/a.py", "ha"}, {"test/b.py", "hb"}, {"test/old.py", "ho"}});
  TreeHashes to = tree({{"test/a.py::C::test_same", "1"},
                        {"test/a.py::C::test_edited", "2b"},
                        {"test/a.py::C::test_added", "7"},
                        {"test/b.py::test_x", "4"},
                        {"test/b.py::test_y", "5b"},
                        {"test/b.py::test_new", "8"},
                        {"test/fresh.py::test_f", "9"}},
                       {{"test/a.py", "ha"}, {"test/b.py", "hb-edited"}, {"test/fresh.py", "hf"}});
  TestDelta d = compare_trees(from, to);
  EXPECT_EQ(d.added, 3);
  EXPECT_EQ(d.changed, 3);  // test_edited, test_y, and test_x through b.py's helpers
  EXPECT_EQ(d.removed_count, 2);
  EXPECT_EQ(d.unchanged, 1);
  ASSERT_EQ(d.files.size(), 4u);
  EXPECT_EQ(d.files[0].relpath, "test/a.py");
  EXPECT_EQ(d.files[0].added, 1);
  EXPECT_EQ(d.files[0].changed, 1);
  EXPECT_EQ(d.files[0].removed, 1);
  EXPECT_EQ(d.files[0].unchanged, 1);
  EXPECT_FALSE(d.files[0].helpers_changed);
  EXPECT_TRUE(d.files[1].helpers_changed);
  EXPECT_EQ(d.files[1].changed, 2);
  EXPECT_EQ(d.files[1].unchanged, 0);
  EXPECT_EQ(d.files[2].relpath, "test/fresh.py");
  EXPECT_EQ(d.files[3].relpath, "test/old.py");
  EXPECT_EQ(d.files[3].removed, 1);
  EXPECT_EQ(d.reasons.at("test/a.py::C::test_added"), kReasonNew);
  EXPECT_EQ(d.reasons.at("test/a.py::C::test_edited"), kReasonChanged);
  EXPECT_EQ(d.reasons.at("test/b.py::test_x"), kReasonHelpers);
  EXPECT_EQ(d.reasons.at("test/b.py::test_y"), kReasonChanged);  // its own change comes first
  EXPECT_EQ(d.reasons.at("test/b.py::test_new"), kReasonNew);
  EXPECT_FALSE(d.reasons.count("test/a.py::C::test_same"));
  EXPECT_EQ(d.removed,
            (std::vector<std::string>{"test/a.py::C::test_gone", "test/old.py::test_z"}));

  nlohmann::json sel = delta_selection(d);
  EXPECT_TRUE(sel["files"].empty());
  EXPECT_TRUE(sel["tests"].empty());
  EXPECT_EQ(sel["bases"].size(), 6u);
  EXPECT_EQ(sel["reasons"]["test/b.py::test_x"], "file-level helpers changed");
  EXPECT_EQ(sel["changed_files"],
            nlohmann::json({"test/a.py", "test/b.py", "test/fresh.py", "test/old.py"}));
  EXPECT_EQ(sel["counts"]["unchanged"], 1);
}

TEST(CompareTrees, LeavesOutFilesThatDoNotParse) {
  TreeHashes from = tree({{"test/a.py::test_1", "1"}, {"test/b.py::test_2", "2"}},
                         {{"test/a.py", "ha"}, {"test/b.py", "hb"}});
  TreeHashes to = tree({{"test/a.py::test_1", "1"}}, {{"test/a.py", "ha"}});
  to.errors["test/b.py"] = "SyntaxError: invalid syntax (line 3)";
  TestDelta d = compare_trees(from, to);
  EXPECT_EQ(d.removed_count, 0);  // not "removed": b.py could not be read
  EXPECT_EQ(d.unchanged, 1);
  EXPECT_EQ(d.errors.at("test/b.py (to)"), "SyntaxError: invalid syntax (line 3)");
}

TEST(ParseTreeHashes, RejectsMalformedOutput) {
  EXPECT_THROW(parse_tree_hashes(nlohmann::json::array(), "out.json"), Error);
  try {
    parse_tree_hashes({{"tests", {{"test/a.py::test_1", 3}}}}, "out.json");
    FAIL() << "a number as a hash must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.json: \"tests\".\"test/a.py::test_1\""),
              std::string::npos)
        << e.what();
  }
}

TEST(HashTestTree, HashesNormalizedSourceThroughThePythonModule) {
  std::string a = make_temp_dir(), b = make_temp_dir();
  fs::create_directories(a + "/test");
  fs::create_directories(b + "/test");
  write_file(a + "/test/test_x.py",
             "import os\n\ndef helper():\n    return 1\n\nclass TestX:\n    def test_one(self):\n"
             "        assert helper() == 1\n\n    def test_two(self):\n        pass\n");
  // Comments and formatting only.
  write_file(b + "/test/test_x.py",
             "import os\n\n\ndef helper():  # the helper\n    return (1)\n\nclass TestX:\n"
             "    # first\n    def test_one(self):\n        assert helper()==1\n\n"
             "    def test_two(self):\n        pass  # nothing\n");
  TreeHashes from = hash_test_tree("/usr/bin/python3", a, {}, a + "/scratch");
  TreeHashes to = hash_test_tree("/usr/bin/python3", b, {"test/test_x.py"}, b + "/scratch");
  EXPECT_EQ(from.tests.size(), 2u);
  EXPECT_TRUE(from.tests.count("test/test_x.py::TestX::test_one"));
  EXPECT_EQ(from.tests, to.tests);
  EXPECT_EQ(from.helpers, to.helpers);
  EXPECT_THROW(hash_test_tree("/usr/bin/python3", a + "/missing", {}, a + "/scratch2"), Error);
}

}  // namespace
}  // namespace ootci
