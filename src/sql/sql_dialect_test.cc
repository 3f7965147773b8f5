#include "sql/sql_dialect.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(SqlDialect, NumbersPlaceholdersOutsideQuotes) {
  EXPECT_EQ(numbered_placeholders("SELECT a FROM t WHERE b = ? AND c = '?' AND \"d?\" = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND \"d?\" = $2");
  EXPECT_EQ(numbered_placeholders("VALUES (?,?,?)"), "VALUES ($1,$2,$3)");
  EXPECT_EQ(numbered_placeholders("SELECT 1"), "SELECT 1");
}

TEST(SqlDialect, PlaceholderListsAndRanges) {
  EXPECT_EQ(placeholder_list(3), "?,?,?");
  EXPECT_EQ(placeholder_list(0), "");
  EXPECT_EQ(sql_limit(-1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(sql_limit(5), 5);
  EXPECT_EQ(sql_offset(-3), 0);
  EXPECT_EQ(sql_offset(7), 7);
}

}  // namespace
}  // namespace ootci
