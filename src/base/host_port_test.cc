#include "base/host_port.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(HostPort, ParsesHostAndPort) {
  auto hp = parse_host_port("127.0.0.1:8080");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8080);
  EXPECT_EQ(parse_host_port("0.0.0.0:0")->port, 0);
}

TEST(HostPort, RejectsWhatIsNotHostColonPort) {
  for (const char* bad : {"", "8080", ":8080", "host:", "host:http", "host:65536", "host:-1",
                          "host:123456", "host:80x"})
    EXPECT_FALSE(parse_host_port(bad)) << bad;
}

}  // namespace
}  // namespace ootci
