#include "relay/callback_token.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(CallbackTokens, RoundTripAndExpiry) {
  CallbackTokens t(CallbackTokens::derive_key("secret"), 100);
  std::string tok = t.mint("d1", "acme/b", "abc", 1000);
  auto c = t.verify(tok, 1050);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->delivery_id, "d1");
  EXPECT_EQ(c->repo, "acme/b");
  EXPECT_EQ(c->head_sha, "abc");
  EXPECT_EQ(c->expires_s, 1100);
  EXPECT_FALSE(t.verify(tok, 1101));
}

TEST(CallbackTokens, OtherKeyRejected) {
  CallbackTokens a(CallbackTokens::derive_key("secret"), 100);
  CallbackTokens b(CallbackTokens::derive_key("other"), 100);
  EXPECT_FALSE(b.verify(a.mint("d1", "acme/b", "abc", 1000), 1000));
}

}  // namespace
}  // namespace ootci
