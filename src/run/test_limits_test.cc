#include "run/test_limits.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

RunSettings settings() {
  RunSettings r;
  r.test_timeout_s = 900;
  r.test_timeout_factor = 10;
  r.test_timeout_floor_s = 60;
  r.discover_test_timeout_s = 120;
  return r;
}

TEST(TestLimit, AMultipleOfTheRecordedDurationBetweenFloorAndCap) {
  TestLimit l = test_limit(settings(), 12.3, false);
  EXPECT_EQ(l.seconds, 123);
  EXPECT_EQ(l.why, "10 × its recorded 12.3 s");
  l = test_limit(settings(), 0.05, false);
  EXPECT_EQ(l.seconds, 60);
  EXPECT_EQ(l.why, "10 × its recorded 0.05 s, raised to test_timeout_floor_s=60");
  l = test_limit(settings(), 400, true);
  EXPECT_EQ(l.seconds, 900);
  EXPECT_EQ(l.why, "10 × its recorded 400 s, capped at test_timeout_s=900");
}

TEST(TestLimit, WithoutARecordTheCapOrDiscoverysShorterDefault) {
  EXPECT_EQ(test_limit(settings(), std::nullopt, false).seconds, 900);
  EXPECT_EQ(test_limit(settings(), std::nullopt, false).why, "test_timeout_s=900");
  TestLimit l = test_limit(settings(), std::nullopt, true);
  EXPECT_EQ(l.seconds, 120);
  EXPECT_EQ(l.why, "no recorded duration: discover_test_timeout_s=120");
  RunSettings low = settings();
  low.test_timeout_s = 30;  // a cap below discovery's default wins, and lowers the floor too
  EXPECT_EQ(test_limit(low, std::nullopt, true).seconds, 30);
  EXPECT_EQ(test_limit(low, 0.01, false).seconds, 30);
}

TEST(TestLimits, LooksEachTestUp) {
  TestLimits limits(settings(), {{"f.py::T::a", 30.0}}, false);
  EXPECT_EQ(limits.of("f.py::T::a").seconds, 300);
  EXPECT_EQ(limits.of("f.py::T::b").seconds, 900);
}

}  // namespace
}  // namespace ootci
