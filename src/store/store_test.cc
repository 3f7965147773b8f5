// One suite, run against every Store implementation. PostgreSQL runs when OOTCI_TEST_PG_URI is set;
// scripts/test always sets it (it starts a throwaway server), and the suite fails without it there.
#include "store/store.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { store_ = open_test_store(GetParam()); }
  std::unique_ptr<Store> store_;
};

DeliveryRecord delivery(const std::string& id) {
  return DeliveryRecord{id, "pull_request", "opened", "abc", 2, 1000, R"({"a":1})"};
}

std::vector<OutboxItem> rows(const std::vector<std::string>& repos, int64_t now = 1000) {
  std::vector<OutboxItem> out;
  for (const auto& r : repos) {
    OutboxItem o;
    o.repo = r;
    o.event_type = "pull_request";
    o.callback_token = "tok-" + r;
    o.created_ms = now;
    o.next_attempt_ms = now;
    o.deadline_ms = now + 60000;
    out.push_back(o);
  }
  return out;
}

TEST_P(StoreTest, MigratesToLatestVersion) {
  EXPECT_GE(store_->schema_version(), 1);
}

TEST_P(StoreTest, AcceptsOnceAndRejectsRedelivery) {
  EXPECT_TRUE(store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y"})));
  EXPECT_FALSE(store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"})));
  auto items = store_->outbox_for("d1");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].repo, "a/x");
  EXPECT_EQ(items[0].callback_token, "tok-a/x");
  EXPECT_EQ(items[0].status, OutboxStatus::kPending);
  auto d = store_->get_delivery("d1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->body, R"({"a":1})");
  EXPECT_EQ(d->pr_number, 2);
  EXPECT_FALSE(store_->get_delivery("nope"));
}

TEST_P(StoreTest, ClaimLeasesRowsUntilTheLeaseExpires) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y"}));
  auto first = store_->claim_due(1000, 10, 500);
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(store_->claim_due(1200, 10, 500).empty());
  EXPECT_EQ(store_->claim_due(1500, 10, 500).size(), 2u);  // lease over: back in play
}

TEST_P(StoreTest, ClaimHonoursLimitAndDueTime) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}, 5000));
  EXPECT_TRUE(store_->claim_due(4999, 10, 100).empty());
  EXPECT_EQ(store_->claim_due(5000, 2, 100).size(), 2u);
  EXPECT_EQ(store_->claim_due(5000, 2, 100).size(), 1u);
}

TEST_P(StoreTest, DeliveredRetryAndFailedTransitions) {
  store_->accept_delivery(delivery("d1"), rows({"a/x", "b/y", "c/z"}));
  auto claimed = store_->claim_due(1000, 10, 100000);
  ASSERT_EQ(claimed.size(), 3u);
  store_->mark_delivered(claimed[0].id, 1, 1234);
  store_->mark_retry(claimed[1].id, 1, 3000, "HTTP 503");
  store_->mark_failed(claimed[2].id, 4, "deadline passed: HTTP 500");
  auto items = store_->outbox_for("d1");
  EXPECT_EQ(items[0].status, OutboxStatus::kDelivered);
  EXPECT_EQ(items[0].delivered_ms, 1234);
  EXPECT_EQ(items[1].status, OutboxStatus::kPending);
  EXPECT_EQ(items[1].last_error, "HTTP 503");
  EXPECT_EQ(items[1].next_attempt_ms, 3000);
  EXPECT_EQ(items[2].status, OutboxStatus::kFailed);
  EXPECT_EQ(items[2].attempts, 4);
  auto c = store_->outbox_counts();
  EXPECT_EQ(c.pending, 1);
  EXPECT_EQ(c.delivered, 1);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(store_->next_due_ms(), 3000);
  // Retried row comes back only when due; delivered and failed rows never do.
  EXPECT_TRUE(store_->claim_due(2999, 10, 100).empty());
  auto again = store_->claim_due(3000, 10, 100);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].repo, "b/y");
  EXPECT_EQ(again[0].attempts, 1);
}

TEST_P(StoreTest, ReleaseLeasesMakesLeasedRowsDueNow) {
  store_->accept_delivery(delivery("d1"), rows({"a/x"}));
  ASSERT_EQ(store_->claim_due(1000, 10, 1000000).size(), 1u);
  store_->release_leases(1100);
  EXPECT_EQ(store_->claim_due(1100, 10, 100).size(), 1u);
}

TEST_P(StoreTest, NoDueRowsMeansNoNextDue) {
  EXPECT_FALSE(store_->next_due_ms());
}

TEST_P(StoreTest, ConcurrentClaimsNeverHandOutARowTwice) {
  std::vector<std::string> repos;
  for (int i = 0; i < 200; ++i) repos.push_back("org/r" + std::to_string(i));
  store_->accept_delivery(delivery("d1"), rows(repos));
  std::mutex mu;
  std::multiset<int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (;;) {
        auto got = store_->claim_due(1000, 7, 1000000);
        if (got.empty()) return;
        std::lock_guard lock(mu);
        for (auto& o : got) seen.insert(o.id);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 200u);
}

TEST_P(StoreTest, CheckRunWanted) {
  EXPECT_FALSE(store_->check_run_wanted("sha", "a/x"));
  store_->set_check_run_wanted("sha", "a/x", 1);
  store_->set_check_run_wanted("sha", "a/x", 2);
  EXPECT_TRUE(store_->check_run_wanted("sha", "a/x"));
  EXPECT_FALSE(store_->check_run_wanted("sha", "b/y"));
}

TEST(StoreOpen, RejectsUnknownUri) {
  EXPECT_THROW(open_store("mysql://x"), Error);
}

TEST(StoreOpen, SqliteReopenKeepsData) {
  std::string path = make_temp_dir() + "/reopen.db";
  open_store("sqlite:" + path)->accept_delivery(delivery("d1"), rows({"a/x"}));
  auto again = open_store("sqlite:" + path);
  EXPECT_EQ(again->outbox_for("d1").size(), 1u);
  EXPECT_EQ(again->schema_version(), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
