#include "select/second_stage.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TestResult outcome_of(const std::string& id, const std::string& outcome,
                      const std::string& error_class = "") {
  TestResult t;
  t.test_id = id;
  t.outcome = *parse_outcome(outcome);
  t.error_class = error_class;
  return t;
}

TEST(SecondStage, AMismatchAloneDoesNotRunIt) {
  std::vector<TestResult> first = {outcome_of("a.py::T::test_mul", "failed", "AssertionError"),
                                   outcome_of("a.py::T::test_add", "passed"),
                                   outcome_of("a.py::T::test_xf", "xfailed", "RuntimeError")};
  EXPECT_EQ(second_stage_reason(first, nullptr), std::nullopt);
}

TEST(SecondStage, AnErrorThatIsNotAMismatchRunsIt) {
  std::vector<TestResult> first = {
      outcome_of("a.py::T::test_mul", "failed", "AssertionError"),
      outcome_of("a.py::T::test_rand", "failed", "NotImplementedError")};
  EXPECT_EQ(second_stage_reason(first, nullptr),
            "a.py::T::test_rand failed with NotImplementedError");
  // Crashes and timeouts are no mismatch either.
  EXPECT_EQ(second_stage_reason({outcome_of("a.py::T::test_x", "error", "SIGSEGV")}, nullptr),
            "a.py::T::test_x errored with SIGSEGV");
  EXPECT_EQ(second_stage_reason({outcome_of("a.py::T::test_x", "error", "Timeout")}, nullptr),
            "a.py::T::test_x errored with Timeout");
}

TEST(SecondStage, AFailureTheLastGreenRunHadAlreadyDoesNotRunIt) {
  std::vector<TestResult> green = {outcome_of("a.py::T::test_old", "failed", "RuntimeError"),
                                   outcome_of("a.py::T::test_new", "passed")};
  EXPECT_EQ(
      second_stage_reason({outcome_of("a.py::T::test_old", "failed", "RuntimeError")}, &green),
      std::nullopt);
  // The same test failing another way, or a test that passed then, counts.
  EXPECT_EQ(second_stage_reason({outcome_of("a.py::T::test_old", "failed", "TypeError")}, &green),
            "a.py::T::test_old failed with TypeError");
  EXPECT_EQ(
      second_stage_reason({outcome_of("a.py::T::test_new", "failed", "RuntimeError")}, &green),
      "a.py::T::test_new failed with RuntimeError");
}

}  // namespace
}  // namespace ootci
