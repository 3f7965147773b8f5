#include "evidence/evidence_path.h"

#include <gtest/gtest.h>

#include <regex>

namespace ootci {
namespace {

TEST(EvidencePath, IsInTheWorkspace) {
  BackendConfig b;
  b.workspace = "/abs/backend/.ootci";
  EXPECT_EQ(evidence_path(b), "/abs/backend/.ootci/evidence.db");
}

TEST(NewRunId, IsUtcTimeAndSixHexDigits) {
  // 2026-11-29T19:10:00.750Z
  std::string id = new_run_id(1795979400750);
  EXPECT_TRUE(std::regex_match(id, std::regex("r-20261129T191000Z-[0-9a-f]{6}"))) << id;
  EXPECT_NE(new_run_id(0), new_run_id(0));  // one chance in 16 million of a false failure
}

}  // namespace
}  // namespace ootci
