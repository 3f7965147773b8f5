#include "relay/outbox_sender.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "net/http_client.h"

namespace ootci {
namespace {

TEST(OutboxSender, BackoffDoublesWithJitterAndIsCapped) {
  DispatchPolicy p;
  p.initial_backoff_ms = 100;
  p.max_backoff_ms = 1000;
  for (uint64_t rnd : {0ull, 7ull, 999999ull}) {
    int64_t b1 = OutboxSender::backoff_ms(p, 1, rnd);
    int64_t b3 = OutboxSender::backoff_ms(p, 3, rnd);
    int64_t b30 = OutboxSender::backoff_ms(p, 30, rnd);
    EXPECT_GE(b1, 50);
    EXPECT_LE(b1, 100);
    EXPECT_GE(b3, 200);
    EXPECT_LE(b3, 400);
    EXPECT_GE(b30, 500);
    EXPECT_LE(b30, 1000);
  }
  EXPECT_NE(OutboxSender::backoff_ms(p, 3, 1), OutboxSender::backoff_ms(p, 3, 150));
}

TEST(OutboxSender, ClientPayloadEmbedsTheBodyVerbatim) {
  std::string body = "{\"b\": 1,   \"a\": [2]}\n";
  std::string cp = build_client_payload("push", "d\"1", body, "tok");
  EXPECT_EQ(cp, "{\"event_type\":\"push\",\"delivery_id\":\"d\\\"1\",\"payload\":" + body +
                    ",\"callback_token\":\"tok\"}");
  auto j = nlohmann::json::parse(cp);
  EXPECT_EQ(j["payload"]["a"][0], 2);
  EXPECT_EQ(j["delivery_id"], "d\"1");
}

TEST(Transport, ClassifiesWhatToRetry) {
  auto with = [](int status, std::multimap<std::string, std::string> h = {}) {
    HttpResult r;
    r.status = status;
    r.headers = std::move(h);
    return classify_http(r);
  };
  EXPECT_TRUE(with(204).delivered);
  EXPECT_TRUE(with(0).retryable);
  EXPECT_TRUE(with(502).retryable);
  EXPECT_TRUE(with(429).retryable);
  EXPECT_EQ(with(429, {{"Retry-After", "7"}}).retry_after_s, 7);
  EXPECT_TRUE(with(403, {{"x-ratelimit-remaining", "0"}}).retryable);
  EXPECT_FALSE(with(403).retryable);
  EXPECT_FALSE(with(404).retryable);
  EXPECT_FALSE(with(422).retryable);
}

}  // namespace
}  // namespace ootci
