#include "relay/rate_limit.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(RateLimiter, SlidingWindowPerKeyWithRetryAfter) {
  RateLimiter r(3, 60000);
  EXPECT_EQ(r.acquire("a", 1000), 0);
  EXPECT_EQ(r.acquire("a", 2000), 0);
  EXPECT_EQ(r.acquire("a", 3000), 0);
  EXPECT_EQ(r.acquire("a", 4000), 57);  // the 1000 ms hit leaves at 61000
  EXPECT_EQ(r.acquire("b", 4000), 0);   // per repo
  EXPECT_EQ(r.acquire("a", 61000), 0);
  EXPECT_EQ(r.acquire("a", 61500), 1);  // the 2000 ms hit leaves at 62000: 0.5 s, rounded up
}

}  // namespace
}  // namespace ootci
