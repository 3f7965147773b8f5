#include "relay/redelivery.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(Redelivery, OnlyRelayedWebhooksNeverAnswered2xxRecentAndNotRefusedFor4xx) {
  int64_t now = 10'000'000;
  std::vector<HookDelivery> all = {
      {1, "refused", now - 5000, 503, "pull_request", "opened"},
      {2, "refused-then-ok", now - 9000, 503, "push", ""},
      {3, "refused-then-ok", now - 8000, 200, "push", ""},  // redelivered already
      {4, "bad-signature", now - 7000, 401, "pull_request", "opened"},
      {5, "down", now - 6000, 0, "check_run", "rerequested"},  // the relay did not answer
      {6, "issue", now - 4000, 503, "issues", "opened"},       // not an event the relay takes
      {7, "old", now - 7'200'000, 503, "pull_request", "synchronize"},
      {8, "twice", now - 3000, 502, "pull_request", "labeled"},
      {9, "twice", now - 1000, 503, "pull_request", "labeled"},
      {10, "", now - 1000, 503, "push", ""},
  };
  auto got = redelivery_candidates(all, now, 3'600'000);
  std::vector<std::pair<int64_t, std::string>> ids;
  for (const auto& d : got) ids.push_back({d.id, d.guid});
  // Newest first, each webhook once, as its newest attempt.
  EXPECT_EQ(ids, (std::vector<std::pair<int64_t, std::string>>{
                     {9, "twice"}, {1, "refused"}, {5, "down"}}));
}

}  // namespace
}  // namespace ootci
