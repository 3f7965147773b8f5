#include "sql/sql_db.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "base/error.h"
#include "sql/migrate.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

// The same tests on a new SQLite file and, when scripts/test started a server, on a new
// PostgreSQL schema: the statements are one text for both.
class SqlDbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { uri_ = fresh_store_uri(GetParam()); }
  std::unique_ptr<SqlDb> open() {
    return GetParam() == "sqlite" ? open_sqlite_db(uri_.substr(7), 5000)
                                  : open_postgres_db(uri_, 2, 5000);
  }
  std::string uri_;
};

std::string text0(const SqlRow& r) {
  return r.text(0);
}

int64_t rows_in_t(SqlDb& db) {
  return db.read("count", [](SqlTx& tx) {
    return *tx.first("SELECT COUNT(*) FROM t", {}, [](const SqlRow& r) { return r.i64(0); });
  });
}

TEST_P(SqlDbTest, ParametersOfEveryKindRoundTripAndWritesCountChangedRows) {
  auto db = open();
  db->write("create", [](SqlTx& tx) {
    tx.script("CREATE TABLE t (i BIGINT, r DOUBLE PRECISION, s TEXT, n TEXT)");
  });
  std::string text = "it's \"quoted\" ? text";
  int64_t inserted = db->write("insert", [&](SqlTx& tx) {
    return tx.exec("INSERT INTO t (i, r, s, n) VALUES (?, ?, ?, ?)",
                   {int64_t{1} << 40, 2.5, text, nullptr}) +
           tx.exec("INSERT INTO t (i, r, s, n) VALUES (?, ?, ?, ?)", {-3, 0.25, "", "x"});
  });
  EXPECT_EQ(inserted, 2);
  struct Row {
    int64_t i;
    double r;
    std::string s;
    bool n_null;
  };
  auto rows = db->read("select", [](SqlTx& tx) {
    return tx.all("SELECT i, r, s, n FROM t ORDER BY i DESC", {}, [](const SqlRow& r) {
      return Row{r.i64(0), r.f64(1), r.text(2), r.is_null(3)};
    });
  });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].i, int64_t{1} << 40);
  EXPECT_EQ(rows[0].r, 2.5);
  EXPECT_EQ(rows[0].s, text);
  EXPECT_TRUE(rows[0].n_null);
  EXPECT_EQ(rows[1].i, -3);
  EXPECT_FALSE(rows[1].n_null);
  EXPECT_EQ(db->write("update", [](SqlTx& tx) { return tx.exec("UPDATE t SET s = 'y'"); }), 2);
}

TEST_P(SqlDbTest, AThrowingTransactionLeavesNothingBehind) {
  auto db = open();
  db->write("create", [](SqlTx& tx) { tx.script("CREATE TABLE t (s TEXT PRIMARY KEY)"); });
  EXPECT_THROW(db->write("insert",
                         [](SqlTx& tx) {
                           tx.exec("INSERT INTO t (s) VALUES (?)", {"a"});
                           tx.exec("INSERT INTO t (s) VALUES (?)", {"a"});  // duplicate key
                         }),
               Error);
  EXPECT_THROW(db->write("insert",
                         [](SqlTx& tx) {
                           tx.exec("INSERT INTO t (s) VALUES (?)", {"b"});
                           throw Error("changed my mind");
                         }),
               Error);
  auto all = db->read("select", [](SqlTx& tx) { return tx.all("SELECT s FROM t", {}, text0); });
  EXPECT_TRUE(all.empty());
  // The connection is still usable after both rollbacks.
  db->write("insert", [](SqlTx& tx) { tx.exec("INSERT INTO t (s) VALUES (?)", {"c"}); });
  EXPECT_EQ(db->read("select", [](SqlTx& tx) { return tx.all("SELECT s FROM t", {}, text0); }),
            std::vector<std::string>{"c"});
}

TEST_P(SqlDbTest, ByteOrderAndAggregatesReadTheSameInBothDialects) {
  auto db = open();
  db->write("fill", [](SqlTx& tx) {
    tx.script("CREATE TABLE t (s TEXT, v BIGINT)");
    for (const char* s : {"b", "B", "a", "_", "a-b", "", "aB"})
      tx.exec("INSERT INTO t (s, v) VALUES (?, ?)", {s, 4000000000});
  });
  EXPECT_EQ(db->read("order",
                     [](SqlTx& tx) {
                       return tx.all("SELECT s FROM t ORDER BY s COLLATE \"C\"", {}, text0);
                     }),
            (std::vector<std::string>{"", "B", "_", "a", "a-b", "aB", "b"}));
  // PostgreSQL sums BIGINT as NUMERIC; it still reads as an int64. MAX over no rows is NULL.
  auto sums = db->read("sum", [](SqlTx& tx) {
    return tx.first(
        "SELECT SUM(v), MAX(s COLLATE \"C\"), (SELECT MAX(v) FROM t WHERE v < 0) "
        "FROM t",
        {}, [](const SqlRow& r) {
          return std::tuple{r.i64(0), r.text(1), r.is_null(2), r.i64(2)};
        });
  });
  ASSERT_TRUE(sums);
  EXPECT_EQ(*sums, std::tuple(int64_t{28000000000}, std::string("b"), true, int64_t{0}));
}

TEST_P(SqlDbTest, MigrationsUpgradeInPlaceAndRefuseANewerDatabase) {
  SchemaHistory v1{"test", {"CREATE TABLE t (s TEXT NOT NULL);"}, nullptr};
  {
    auto db = open();
    EXPECT_EQ(schema_version(*db), 0);
    migrate(*db, v1);
    EXPECT_EQ(schema_version(*db), 1);
    db->write("fill", [](SqlTx& tx) { tx.exec("INSERT INTO t (s) VALUES ('kept')"); });
    migrate(*db, v1);  // current: nothing runs (the CREATE would fail)
  }
  SchemaHistory v2 = v1;
  v2.steps.push_back("ALTER TABLE t ADD COLUMN n BIGINT NOT NULL DEFAULT 7;");
  auto db = open();
  migrate(*db, v2);
  EXPECT_EQ(schema_version(*db), 2);
  auto rows = db->read("select", [](SqlTx& tx) {
    return tx.all("SELECT s, n FROM t", {},
                  [](const SqlRow& r) { return r.text(0) + "/" + std::to_string(r.i64(1)); });
  });
  EXPECT_EQ(rows, std::vector<std::string>{"kept/7"});
  try {
    migrate(*db, v1);
    FAIL() << "a version-2 database opened with a version-1 history";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "test schema version 2 is newer than this ootci (1)");
  }
}

TEST_P(SqlDbTest, ALegacyVersionIsReadOnceAndItsStepsAreSkipped) {
  auto db = open();
  // A database from before the runner: step 1 applied, its version kept elsewhere.
  db->write("legacy", [](SqlTx& tx) {
    tx.script("CREATE TABLE t (s TEXT NOT NULL); CREATE TABLE old_version (v INT NOT NULL);");
    tx.exec("INSERT INTO old_version (v) VALUES (1)");
  });
  int legacy_reads = 0;
  SchemaHistory h{
      "test",
      {"CREATE TABLE t (s TEXT NOT NULL);", "CREATE TABLE u (s TEXT NOT NULL);"},
      [&](SqlTx& tx) {
        ++legacy_reads;
        return static_cast<int>(tx.first("SELECT v FROM old_version", {}, [](const SqlRow& r) {
                                    return r.i64(0);
                                  }).value_or(0));
      }};
  migrate(*db, h);
  EXPECT_EQ(schema_version(*db), 2);
  EXPECT_EQ(legacy_reads, 1);
  migrate(*db, h);
  EXPECT_EQ(legacy_reads, 1);  // from now on the schema_version table is the record
  db->write("use", [](SqlTx& tx) { tx.exec("INSERT INTO u (s) VALUES ('x')"); });
}

// What a server answers 503 for (the database refuses writes) is SqlUnavailable; a broken
// statement is a plain Error, a bug to report, not a reason to retry.
TEST_P(SqlDbTest, ADatabaseThatRefusesWritesIsUnavailableAndABadStatementIsNot) {
  auto db = open();
  db->write("create", [](SqlTx& tx) { tx.script("CREATE TABLE t (s TEXT NOT NULL);"); });
  auto refused = [&] {
    if (GetParam() == "sqlite") {
      // Another process holds the write lock past this connection's busy timeout.
      auto other = open_sqlite_db(uri_.substr(7), 50);
      db->write("hold", [&](SqlTx&) {
        other->write("insert", [](SqlTx& tx) { tx.exec("INSERT INTO t (s) VALUES ('a')"); });
      });
    } else {
      // As a read-only server or standby answers (SQLSTATE 25006).
      db->write("insert", [](SqlTx& tx) {
        tx.exec("SET TRANSACTION READ ONLY");
        tx.exec("INSERT INTO t (s) VALUES ('a')");
      });
    }
  };
  EXPECT_THROW(refused(), SqlUnavailable);
  try {
    db->write("bad", [](SqlTx& tx) { tx.exec("INSERT INTO no_such_table (s) VALUES ('a')"); });
    FAIL() << "no error";
  } catch (const SqlUnavailable& e) {
    FAIL() << "a bad statement read as unavailable: " << e.what();
  } catch (const Error&) {
  }
  EXPECT_EQ(rows_in_t(*db), 0);
  if (GetParam() == "postgres") {
    // A server that cannot be reached is unavailable too.
    auto gone = open_postgres_db("postgresql://127.0.0.1:1/none?connect_timeout=2", 1, 5000);
    EXPECT_THROW(gone->read("r", [](SqlTx& tx) { tx.exec("SELECT 1"); }), SqlUnavailable);
  }
}

// The busy timeout bounds a transaction's whole wait: a thread of this process that holds the
// connection makes the others' transactions unavailable after it, as another process holding the
// file's lock does, instead of queueing them for as long as it likes (the relay's webhooks must
// get their 503 within GitHub's 10 s).
TEST(SqliteDb, AConnectionHeldByAnotherThreadPastTheBusyTimeoutIsUnavailable) {
  std::string uri = fresh_store_uri("sqlite");
  auto db = open_sqlite_db(uri.substr(7), 300);
  db->write("create", [](SqlTx& tx) { tx.script("CREATE TABLE t (s TEXT NOT NULL);"); });
  std::promise<void> inside, done;
  std::thread holder([&] {
    db->write("hold", [&](SqlTx& tx) {
      tx.exec("INSERT INTO t (s) VALUES ('held')");
      inside.set_value();
      done.get_future().wait_for(std::chrono::seconds(20));
    });
  });
  inside.get_future().wait();
  EXPECT_THROW(db->write("insert", [](SqlTx& tx) { tx.exec("INSERT INTO t (s) VALUES ('b')"); }),
               SqlUnavailable);
  done.set_value();
  holder.join();
  EXPECT_EQ(rows_in_t(*db), 1);
}

// The wait is one deadline per transaction, kept for every thread of a process: four threads
// writing while another connection holds the write lock each fail as unavailable once their own
// wait is over, not one wait after another (the fourth after four waits), and commit nothing.
// The bound is twice the wait, so a loaded machine's scheduling does not fail it; queued waits
// would take up to four times it.
TEST_P(SqlDbTest, ThreadsWaitingForALockHeldElsewhereEachGiveUpAtTheirOwnDeadline) {
  constexpr int kWaitMs = 1000;
  auto db = GetParam() == "sqlite" ? open_sqlite_db(uri_.substr(7), kWaitMs)
                                   : open_postgres_db(uri_, 2, kWaitMs);
  db->write("create", [](SqlTx& tx) { tx.script("CREATE TABLE t (s TEXT NOT NULL);"); });
  auto other = GetParam() == "sqlite" ? open_sqlite_db(uri_.substr(7), 5000)
                                      : open_postgres_db(uri_, 1, 5000);
  std::promise<void> inside, release;
  std::thread holder([&] {
    other->write("hold", [&](SqlTx& tx) {
      if (GetParam() == "postgres") tx.exec("LOCK TABLE t IN EXCLUSIVE MODE");
      tx.exec("INSERT INTO t (s) VALUES ('held')");
      inside.set_value();
      release.get_future().wait_for(std::chrono::seconds(30));
    });
  });
  inside.get_future().wait();
  std::vector<std::future<std::pair<bool, int64_t>>> writers;
  for (int i = 0; i < 4; ++i)
    writers.push_back(std::async(std::launch::async, [&] {
      auto start = std::chrono::steady_clock::now();
      bool unavailable = false;
      try {
        db->write("insert", [](SqlTx& tx) { tx.exec("INSERT INTO t (s) VALUES ('late')"); });
      } catch (const SqlUnavailable&) {
        unavailable = true;
      }
      return std::pair(unavailable, std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
    }));
  for (auto& w : writers) {
    auto [unavailable, ms] = w.get();
    EXPECT_TRUE(unavailable);
    EXPECT_LT(ms, 2 * kWaitMs);
  }
  release.set_value();
  holder.join();
  EXPECT_EQ(rows_in_t(*db), 1);
}

// A process that starts while another one holds the database past its wait (migrating it, in
// the field) waits for it: each transaction gives up at the wait, and migrate tries again within
// its patience. Without patience it fails as unavailable, and nothing of it is committed.
TEST_P(SqlDbTest, AMigrationWaitsPastTheDatabasesWaitForAnotherProcessHoldingIt) {
  constexpr int kWaitMs = 300;
  auto db = GetParam() == "sqlite" ? open_sqlite_db(uri_.substr(7), kWaitMs)
                                   : open_postgres_db(uri_, 1, kWaitMs);
  SchemaHistory v1{"test", {"CREATE TABLE t (s TEXT NOT NULL);"}, nullptr};
  SchemaHistory v2{"test", {v1.steps[0], "CREATE TABLE u (n INT);"}, nullptr};
  migrate(*db, v1);
  auto other = open();
  std::promise<void> inside, release;
  std::atomic<bool> released{false};
  std::thread holder([&] {
    other->write("hold", [&](SqlTx& tx) {
      // The version check reads schema_version; PostgreSQL's reads wait only for this lock.
      if (GetParam() == "postgres") tx.exec("LOCK TABLE schema_version IN ACCESS EXCLUSIVE MODE");
      tx.exec("INSERT INTO t (s) VALUES ('held')");
      inside.set_value();
      release.get_future().wait_for(std::chrono::seconds(30));
      released = true;
    });
  });
  inside.get_future().wait();
  EXPECT_THROW(migrate(*db, v2, 0), SqlUnavailable);
  auto patient = std::async(std::launch::async, [&] { migrate(*db, v2, 60000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kWaitMs));  // past a wait or two
  release.set_value();
  patient.get();  // no SqlUnavailable: it waited for the holder
  EXPECT_TRUE(released);
  holder.join();
  EXPECT_EQ(schema_version(*db), 2);
  EXPECT_EQ(rows_in_t(*db), 1);
}

INSTANTIATE_TEST_SUITE_P(Dialects, SqlDbTest, ::testing::ValuesIn(test_store_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ootci
