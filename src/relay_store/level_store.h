#pragma once
// The relay store's levels: each repo's level history (its tenure at a level) and the pending
// demotions of L3 repos.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "relay_store/records.h"
#include "sql/sql_db.h"

namespace ootci {

class LevelStore {
 public:
  explicit LevelStore(SqlDb& db) : db_(db) {}

  // Appends only when the level changed.
  void record_level(const std::string& repo, const std::string& level, int64_t now_ms);
  // When the current run at `level` began; none when the repo is at another level now.
  std::optional<int64_t> level_since(const std::string& repo, const std::string& level);
  // When the repo first reached `level` (its tenure counts from there, as upstream's does).
  std::optional<int64_t> first_at_level(const std::string& repo, const std::string& level);

  // Pending demotions (see Demotion). set_demotion keeps the first since_ms of an open PR.
  std::vector<Demotion> demotions();
  std::optional<Demotion> demotion(const std::string& repo);
  void set_demotion(const Demotion& demotion);
  void clear_demotion(const std::string& repo);

 private:
  SqlDb& db_;
};

}  // namespace ootci
