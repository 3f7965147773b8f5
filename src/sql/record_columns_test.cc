#include "sql/record_columns.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "testing/test_env.h"

namespace ootci {
namespace {

enum class Color { kRed, kGreen };
const char* to_string(Color c) {
  return c == Color::kRed ? "red" : "green";
}
Color parse_color(std::string_view text) {
  return text == "green" ? Color::kGreen : Color::kRed;
}

struct Sample {
  int64_t id = 0;
  std::string name;
  int count = 0;
  double weight = 0;
  bool flag = false;
  Color color = Color::kRed;
};

const RecordColumns<Sample> kSampleColumns = {
    column<&Sample::id>("id"),       column<&Sample::name>("name"),
    column<&Sample::count>("count"), column<&Sample::weight>("weight"),
    column<&Sample::flag>("flag"),   enum_column<&Sample::color, parse_color>("color"),
};

TEST(RecordColumns, NamesAndPlaceholdersFollowTheTable) {
  EXPECT_EQ(kSampleColumns.names(), "id, name, count, weight, flag, color");
  EXPECT_EQ(kSampleColumns.placeholders(), "?,?,?,?,?,?");
  EXPECT_EQ(kSampleColumns.size(), 6);
  auto few = kSampleColumns.subset({"flag", "id"});
  EXPECT_EQ(few.names(), "flag, id");
  EXPECT_THROW(kSampleColumns.subset({"nope"}), std::logic_error);
}

// What the writer binds the reader reads back, through a real database, field by field; a
// reader at an offset skips the columns before the table's.
TEST(RecordColumns, WriterAndReaderShareTheTable) {
  auto db = open_sqlite_db(fresh_store_uri("sqlite").substr(7), 5000);
  Sample in{7, "seven", 3, 2.5, true, Color::kGreen};
  Sample back = db->write("t", [&](SqlTx& tx) {
    tx.exec(
        "CREATE TABLE s (extra TEXT, id INTEGER, name TEXT, count INTEGER, weight REAL, "
        "flag INTEGER, color TEXT)");
    std::vector<SqlParam> params{"x"};
    kSampleColumns.bind(in, params);
    tx.exec("INSERT INTO s (extra, " + kSampleColumns.names() + ") VALUES (?," +
                kSampleColumns.placeholders() + ")",
            params);
    EXPECT_EQ(*tx.first("SELECT color FROM s", {}, [](const SqlRow& r) { return r.text(0); }),
              "green");
    return *tx.first("SELECT extra, " + kSampleColumns.names() + " FROM s", {},
                     [](const SqlRow& r) { return kSampleColumns.read(r, 1); });
  });
  EXPECT_EQ(back.id, 7);
  EXPECT_EQ(back.name, "seven");
  EXPECT_EQ(back.count, 3);
  EXPECT_EQ(back.weight, 2.5);
  EXPECT_TRUE(back.flag);
  EXPECT_EQ(back.color, Color::kGreen);
}

// A column whose text is computed when it is bound: the parameter keeps the text alive through
// copies, after the function that made it has returned.
TEST(RecordColumns, ComputedTextOutlivesItsBinding) {
  static const RecordColumns<Sample> columns{
      {"tag", [](const Sample& s) { return SqlParam::owned("n" + std::to_string(s.count) + "!"); },
       [](Sample& s, const SqlRow& row, int i) { s.name = row.text(i); }},
  };
  Sample sample;
  sample.count = 42;
  std::vector<SqlParam> params = columns.bind(sample);
  std::vector<SqlParam> copy = params;
  params.clear();
  EXPECT_EQ(copy[0].text_value(), "n42!");
  auto db = open_sqlite_db(fresh_store_uri("sqlite").substr(7), 5000);
  std::string back = db->write("t", [&](SqlTx& tx) {
    tx.exec("CREATE TABLE s (tag TEXT)");
    tx.exec("INSERT INTO s (tag) VALUES (?)", copy);
    return *tx.first("SELECT tag FROM s", {}, [](const SqlRow& r) { return columns.read(r).name; });
  });
  EXPECT_EQ(back, "n42!");
}

}  // namespace
}  // namespace ootci
