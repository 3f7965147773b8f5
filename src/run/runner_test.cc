#include "run/runner.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string selection_file(const std::string& json) {
  std::string path = make_temp_dir() + "/selection.json";
  write_file(path, json);
  return path;
}

TEST(LoadSelection, ReadsFilesTestsAndBases) {
  Selection s = load_selection(selection_file(R"({
    "files": ["test/test_a.py"],
    "tests": ["test/test_b.py::TestBPRIVATEUSEONE::test_x_privateuseone"],
    "bases": ["test/test_c.py::TestC::test_y", "test/test_c.py::test_plain"],
    "reasons": {"test/test_c.py::TestC::test_y": "new test"}})"));
  EXPECT_EQ(s.files, std::set<std::string>{"test/test_a.py"});
  EXPECT_EQ(s.tests,
            std::set<std::string>{"test/test_b.py::TestBPRIVATEUSEONE::test_x_privateuseone"});
  EXPECT_EQ(s.bases,
            (std::set<std::string>{"test/test_c.py::TestC::test_y", "test/test_c.py::test_plain"}));
}

TEST(LoadSelection, BasesMustBeAListOfStrings) {
  try {
    load_selection(selection_file(R"({"bases": ["a::B::c", 3]})"));
    FAIL() << "a number among bases must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"bases\" must be a list of strings"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_selection(selection_file(R"({"bases": "a::B::c"})")), Error);
}

// `select changed --staged`: the second stage's tests.
TEST(LoadSelection, ReadsTheSecondStage) {
  Selection s = load_selection(selection_file(R"({
    "tests": ["a.py::T::test_own"],
    "then": {"tests": ["a.py::T::test_inputs"], "when": "a first-stage test raises"}})"));
  EXPECT_EQ(s.tests, std::set<std::string>{"a.py::T::test_own"});
  EXPECT_EQ(s.then_tests, std::set<std::string>{"a.py::T::test_inputs"});
  for (const char* bad : {R"({"then": ["a.py::T::test_inputs"]})", R"({"then": {"tests": [1]}})",
                          R"({"then": {"tests": "a.py::T::test_inputs"}})"}) {
    try {
      load_selection(selection_file(bad));
      ADD_FAILURE() << bad << " must be an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"then\" must be an object whose \"tests\" is a list"),
                std::string::npos)
          << e.what();
    }
  }
}

// Spyre's CI filter: a file runs when one of its labels is selected; an unlabelled one never does.
TEST(FilesWithLabels, SelectsByAnyLabelAndNamesUnlabelledFiles) {
  nlohmann::json plan = nlohmann::json::parse(R"({"files": [
      {"relpath": "test/a.py", "labels": ["unit", "trunk"]},
      {"relpath": "test/b.py", "labels": ["integration"]},
      {"relpath": "test/c.py", "labels": []},
      {"relpath": "test/d.py"}]})");
  std::vector<std::string> unlabelled;
  EXPECT_EQ(files_with_labels(plan, {"trunk", "regression"}, &unlabelled),
            (std::vector<std::string>{"test/a.py"}));
  EXPECT_EQ(unlabelled, (std::vector<std::string>{"test/c.py", "test/d.py"}));
  EXPECT_EQ(files_with_labels(plan, {"integration", "unit"}, nullptr),
            (std::vector<std::string>{"test/a.py", "test/b.py"}));
}

}  // namespace
}  // namespace ootci
