#include "relay_store/level_store.h"

#include <fmt/format.h>

#include "relay_store/store_sql.h"

namespace ootci {
namespace {

Demotion read_demotion(const SqlRow& r) {
  return demotion_columns().read(r);
}

}  // namespace

void LevelStore::record_level(const std::string& repo, const std::string& level, int64_t now_ms) {
  db_.write("record_level", [&](SqlTx& tx) {
    // Another replica must not append between the read and the insert.
    tx.lock(kLevelLockKey);
    auto last =
        tx.first("SELECT level FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1",
                 {repo}, [](const SqlRow& r) { return r.text(0); });
    if (last == level) return;
    tx.exec(
        "INSERT INTO level_history (repo, level, since_ms) VALUES (?,?,?) "
        "ON CONFLICT DO NOTHING",
        {repo, level, now_ms});
  });
}

std::optional<int64_t> LevelStore::level_since(const std::string& repo, const std::string& level) {
  auto last = db_.first(
      "level_since",
      "SELECT level, since_ms FROM level_history WHERE repo = ? ORDER BY since_ms DESC LIMIT 1",
      {repo}, [](const SqlRow& r) {
        return std::pair{r.text(0), r.i64(1)};
      });
  if (!last || last->first != level) return std::nullopt;
  return last->second;
}

std::optional<int64_t> LevelStore::first_at_level(const std::string& repo,
                                                  const std::string& level) {
  auto first =
      db_.first("first_at_level",
                "SELECT MIN(since_ms), COUNT(*) FROM level_history WHERE repo = ? AND level = ?",
                {repo, level}, [](const SqlRow& r) {
                  return std::pair{r.i64(0), r.i64(1)};
                });
  if (!first || first->second == 0) return std::nullopt;
  return first->first;
}

std::vector<Demotion> LevelStore::demotions() {
  return db_.all("demotions",
                 fmt::format("SELECT {} FROM demotions ORDER BY repo COLLATE \"C\"",
                             demotion_columns().names()),
                 {}, read_demotion);
}

std::optional<Demotion> LevelStore::demotion(const std::string& repo) {
  return db_.first(
      "demotion",
      fmt::format("SELECT {} FROM demotions WHERE repo = ?", demotion_columns().names()), {repo},
      read_demotion);
}

void LevelStore::set_demotion(const Demotion& d) {
  // The first since_ms stays: a job's check run is suppressed from when the PR was first seen.
  db_.write("set_demotion", [&](SqlTx& tx) {
    tx.exec(fmt::format("INSERT INTO demotions ({}) VALUES ({}) ON CONFLICT (repo) DO UPDATE SET "
                        "pr_number = excluded.pr_number, pr_url = excluded.pr_url",
                        demotion_columns().names(), demotion_columns().placeholders()),
            demotion_columns().bind(d));
  });
}

void LevelStore::clear_demotion(const std::string& repo) {
  db_.exec("clear_demotion", "DELETE FROM demotions WHERE repo = ?", {repo});
}

}  // namespace ootci
