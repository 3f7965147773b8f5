// The SQLite evidence store (docs/run.md, "Evidence store").
#include "backend/evidence.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>

#include "base/error.h"
#include "base/sqlite_db.h"

namespace ootci {
namespace {

// Append only: entry i takes the schema from version i to i + 1 (meta.schema_version). Never
// edit an entry that has shipped; add one.
const std::vector<std::string>& evidence_migrations() {
  static const std::vector<std::string> steps = {
      R"sql(
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  backend TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  shard TEXT,
  status TEXT NOT NULL,
  verdict TEXT,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER,
  manifest TEXT NOT NULL
);
CREATE TABLE results (
  run_id TEXT NOT NULL REFERENCES runs(id),
  test_id TEXT NOT NULL,
  file TEXT NOT NULL,
  class TEXT NOT NULL,
  name TEXT NOT NULL,
  device TEXT NOT NULL,
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  outcome TEXT NOT NULL,
  duration_s REAL NOT NULL,
  error_class TEXT NOT NULL,
  message TEXT NOT NULL,
  reruns INTEGER NOT NULL,
  flaky INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  PRIMARY KEY (run_id, test_id)
);
CREATE INDEX results_by_test ON results(test_id, finished_ms);
)sql",
      // Execution evidence for `ootci discover` and `ootci select`.
      R"sql(
ALTER TABLE results ADD COLUMN base TEXT NOT NULL DEFAULT '';
CREATE TABLE test_ops (
  run_id TEXT NOT NULL REFERENCES runs(id),
  test_id TEXT NOT NULL,
  ops TEXT NOT NULL,
  PRIMARY KEY (run_id, test_id)
);
CREATE TABLE discovered_files (
  relpath TEXT NOT NULL,
  file_hash TEXT NOT NULL,
  backend_rev TEXT NOT NULL,
  run_id TEXT NOT NULL REFERENCES runs(id),
  discovered_ms INTEGER NOT NULL,
  PRIMARY KEY (relpath, file_hash, backend_rev)
);
)sql",
  };
  return steps;
}

// Long enough for a batch insert of a big report by another process to finish; a runner's
// single-result commits take microseconds.
constexpr int kBusyTimeoutMs = 60000;

// Ingest inserts into two indexes keyed by test id, in no useful order; with SQLite's default
// 2 MB page cache it kept evicting and re-reading their pages (50 MB report: 1.55 s -> 1.0 s).
constexpr const char* kConnectionPragmas =
    "PRAGMA cache_size = -65536; PRAGMA mmap_size = 268435456;";

constexpr const char* kRunColumns =
    "id, backend, config_hash, shard, status, verdict, started_ms, ended_ms, manifest";
constexpr const char* kResultColumns =
    "test_id, file, class, name, device, dtype, op, mode, outcome, duration_s, error_class, "
    "message, reruns, flaky, finished_ms, base";

constexpr const char* kInsertResultSql =
    "INSERT OR REPLACE INTO results (run_id, test_id, file, class, name, device, dtype, op, mode, "
    "outcome, duration_s, error_class, message, reruns, flaky, finished_ms, base) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
// Ops as one space-separated text: they are read back per run, never queried one by one.
constexpr const char* kInsertOpsSql =
    "INSERT OR REPLACE INTO test_ops (run_id, test_id, ops) VALUES (?,?,?)";

// Mean duration per test over its newest `window` results in finished runs.
// Mean of the last N results per test in finished runs. Results from whole (unsharded) runs are
// preferred: when a test has any, shard runs are ignored, so running shard 1 cannot change how
// shard 2 is assigned. Tests timed only by shard runs use those.
constexpr const char* kDurationsSql =
    "SELECT test_id, file, AVG(duration_s) FROM ("
    "  SELECT test_id, file, duration_s, whole, MAX(whole) OVER (PARTITION BY test_id) AS "
    "has_whole,"
    "    ROW_NUMBER() OVER (PARTITION BY test_id ORDER BY whole DESC, finished_ms DESC,"
    "      run_id DESC) AS n"
    "  FROM (SELECT r.test_id, r.file, r.duration_s, r.finished_ms, r.run_id,"
    "          (u.shard IS NULL OR u.shard = '') AS whole"
    "        FROM results r JOIN runs u ON u.id = r.run_id WHERE u.status = 'finished')"
    ") WHERE n <= ? AND whole = has_whole GROUP BY test_id";

RunInfo read_run(SqliteStmt& s) {
  RunInfo r;
  r.id = s.text(0);
  r.backend = s.text(1);
  r.config_hash = s.text(2);
  r.shard = s.text(3);
  r.status = s.text(4);
  r.verdict = s.text(5);
  r.started_ms = s.i64(6);
  r.ended_ms = s.i64(7);
  std::string manifest = s.text(8);
  r.manifest = nlohmann::json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (r.manifest.is_discarded()) r.manifest = manifest;  // keep what was stored, unparsed
  return r;
}

TestResult read_result(SqliteStmt& s) {
  TestResult t;
  int i = 0;
  t.test_id = s.text(i++);
  t.file = s.text(i++);
  t.cls = s.text(i++);
  t.name = s.text(i++);
  t.device = s.text(i++);
  t.dtype = s.text(i++);
  t.op = s.text(i++);
  t.mode = s.text(i++);
  t.outcome = s.text(i++);
  t.duration_s = s.f64(i++);
  t.error_class = s.text(i++);
  t.message = s.text(i++);
  t.reruns = static_cast<int>(s.i64(i++));
  t.flaky = s.i64(i++) != 0;
  t.finished_ms = s.i64(i++);
  t.base = s.text(i++);
  return t;
}

void bind_result(SqliteStmt& s, const std::string& run_id, const TestResult& t) {
  int i = 0;
  auto b = [&](const auto& v) { s.bind(++i, v); };
  b(run_id), b(t.test_id), b(t.file), b(t.cls), b(t.name), b(t.device), b(t.dtype), b(t.op);
  b(t.mode), b(t.outcome), b(t.duration_s), b(t.error_class), b(t.message), b(t.reruns);
  b(t.flaky), b(t.finished_ms), b(t.base);
}

std::string join_ops(const std::vector<std::string>& ops) {
  std::string out;
  for (const auto& op : ops) out += (out.empty() ? "" : " ") + op;
  return out;
}

DiscoveredFile read_discovered(SqliteStmt& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.i64(4)};
}

class SqliteEvidenceStore : public EvidenceStore {
 public:
  explicit SqliteEvidenceStore(const std::string& path)
      : path_(path), db_(sqlite_open(path, kBusyTimeoutMs)) {
    try {
      sqlite_exec(db_, kConnectionPragmas);
      migrate();
    } catch (const Error& e) {
      cache_.clear();
      sqlite3_close(db_);
      throw Error(fmt::format("{}: {}", path_, e.what()));
    }
  }
  ~SqliteEvidenceStore() override {
    cache_.clear();  // statements must be finalized before the connection closes
    sqlite3_close(db_);
  }

  void begin_run(const RunInfo& run) override {
    std::lock_guard lock(mu_);
    // Beginning an existing id resumes it: its results stay and started_ms keeps the first start.
    SqliteStmt s(cache_,
                 "INSERT INTO runs (id, backend, config_hash, shard, status, verdict, started_ms, "
                 "ended_ms, manifest) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                 "backend = excluded.backend, config_hash = excluded.config_hash, "
                 "shard = excluded.shard, status = excluded.status, verdict = excluded.verdict, "
                 "ended_ms = excluded.ended_ms, manifest = excluded.manifest");
    s.bind(1, run.id).bind(2, run.backend).bind(3, run.config_hash);
    bind_or_null(s, 4, run.shard);
    s.bind(5, run.status);
    bind_or_null(s, 6, run.verdict);
    s.bind(7, run.started_ms);
    if (run.ended_ms) s.bind(8, run.ended_ms);
    s.bind(9, run.manifest.dump());
    step_or_explain(s, [&] { return fmt::format("begin run {}", run.id); });
  }

  void record(const std::string& run_id, const TestResult& result) override {
    std::lock_guard lock(mu_);
    // One statement outside BEGIN is its own committed transaction.
    if (result.ops.empty()) {
      SqliteStmt s(cache_, kInsertResultSql);
      bind_result(s, run_id, result);
      step_or_explain(s,
                      [&] { return fmt::format("record {} in run {}", result.test_id, run_id); });
      return;
    }
    in_transaction([&] { insert_with_ops(run_id, result); });
  }

  void forget(const std::string& run_id, const std::string& test_id) override {
    std::lock_guard lock(mu_);
    for (const char* sql : {"DELETE FROM results WHERE run_id = ? AND test_id = ?",
                            "DELETE FROM test_ops WHERE run_id = ? AND test_id = ?"}) {
      SqliteStmt s(cache_, sql);
      s.bind(1, run_id);
      s.bind(2, test_id);
      step_or_explain(s, [&] { return fmt::format("forget {} in run {}", test_id, run_id); });
    }
  }

  void record_batch(const std::string& run_id, const std::vector<TestResult>& results) override {
    std::lock_guard lock(mu_);
    in_transaction([&] {
      SqliteStmt s(cache_, kInsertResultSql);
      for (const TestResult& r : results) {
        if (!r.ops.empty()) {
          insert_with_ops(run_id, r);
          continue;
        }
        s.reset();
        bind_result(s, run_id, r);
        step_or_explain(s, [&] { return fmt::format("record {} in run {}", r.test_id, run_id); });
      }
    });
  }

  void finish_run(const std::string& run_id, int64_t ended_ms, const std::string& status,
                  const std::string& verdict, const nlohmann::json& manifest) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(
        cache_, "UPDATE runs SET ended_ms = ?, status = ?, verdict = ?, manifest = ? WHERE id = ?");
    s.bind(1, ended_ms).bind(2, status);
    bind_or_null(s, 3, verdict);
    s.bind(4, manifest.dump()).bind(5, run_id);
    step_or_explain(s, [&] { return fmt::format("finish run {}", run_id); });
    if (sqlite3_changes(db_) == 0)
      throw Error(fmt::format("{}: finish run {}: no such run", path_, run_id));
  }

  std::optional<RunInfo> run(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
    s.bind(1, run_id);
    if (!s.step()) return std::nullopt;
    return read_run(s);
  }

  void delete_run(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    in_transaction([&] {
      for (const char* sql :
           {"DELETE FROM test_ops WHERE run_id = ?", "DELETE FROM results WHERE run_id = ?",
            "DELETE FROM runs WHERE id = ?"}) {
        SqliteStmt s(cache_, sql);
        s.bind(1, run_id);
        step_or_explain(s, [&] { return fmt::format("delete run {}", run_id); });
      }
    });
  }

  std::vector<RunInfo> runs(const std::string& backend) override {
    std::lock_guard lock(mu_);
    // An empty backend lists every run.
    SqliteStmt s(cache_, fmt::format("SELECT {} FROM runs WHERE ? = '' OR backend = ? "
                                     "ORDER BY started_ms DESC, id DESC",
                                     kRunColumns));
    s.bind(1, backend).bind(2, backend);
    std::vector<RunInfo> out;
    while (s.step()) out.push_back(read_run(s));
    return out;
  }

  std::vector<TestResult> results(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, fmt::format("SELECT {} FROM results WHERE run_id = ? ORDER BY test_id",
                                     kResultColumns));
    s.bind(1, run_id);
    std::vector<TestResult> out;
    while (s.step()) out.push_back(read_result(s));
    return out;
  }

  std::set<std::string> finished_tests(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, "SELECT test_id FROM results WHERE run_id = ?");
    s.bind(1, run_id);
    std::set<std::string> out;
    while (s.step()) out.insert(s.text(0));
    return out;
  }

  std::optional<RunInfo> last_green_run(const std::string& backend,
                                        const std::string& config_hash) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, fmt::format("SELECT {} FROM runs WHERE backend = ? AND config_hash = ? "
                                     "AND status = 'finished' AND verdict = 'success' "
                                     "ORDER BY started_ms DESC, id DESC LIMIT 1",
                                     kRunColumns));
    s.bind(1, backend).bind(2, config_hash);
    if (!s.step()) return std::nullopt;
    return read_run(s);
  }

  std::vector<TestResult> history(const std::string& test_id, int limit) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, fmt::format("SELECT {} FROM results WHERE test_id = ? "
                                     "ORDER BY finished_ms DESC, run_id DESC LIMIT ?",
                                     kResultColumns));
    s.bind(1, test_id).bind(2, limit);
    std::vector<TestResult> out;
    while (s.step()) out.push_back(read_result(s));
    return out;
  }

  std::map<std::string, double> test_durations(int window) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, kDurationsSql);
    s.bind(1, window);
    std::map<std::string, double> out;
    while (s.step()) out.emplace(s.text(0), s.f64(2));
    return out;
  }

  std::map<std::string, double> file_durations(int window) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, kDurationsSql);
    s.bind(1, window);
    std::map<std::string, double> out;
    while (s.step()) out[s.text(1)] += s.f64(2);
    return out;
  }

  std::map<std::string, std::vector<std::string>> ops_of_run(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_, "SELECT test_id, ops FROM test_ops WHERE run_id = ?");
    s.bind(1, run_id);
    std::map<std::string, std::vector<std::string>> out;
    while (s.step()) {
      std::vector<std::string>& ops = out[s.text(0)];
      std::string text = s.text(1);
      for (size_t i = 0; i < text.size();) {
        size_t end = text.find(' ', i);
        if (end == std::string::npos) end = text.size();
        if (end > i) ops.push_back(text.substr(i, end - i));
        i = end + 1;
      }
    }
    return out;
  }

  void mark_discovered(const DiscoveredFile& f) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_,
                 "INSERT OR REPLACE INTO discovered_files (relpath, file_hash, backend_rev, "
                 "run_id, discovered_ms) VALUES (?,?,?,?,?)");
    s.bind(1, f.relpath).bind(2, f.file_hash).bind(3, f.backend_rev).bind(4, f.run_id);
    s.bind(5, f.discovered_ms);
    step_or_explain(s, [&] { return fmt::format("mark {} discovered", f.relpath); });
  }

  std::optional<DiscoveredFile> discovered(const std::string& relpath, const std::string& file_hash,
                                           const std::string& backend_rev) override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_,
                 "SELECT relpath, file_hash, backend_rev, run_id, discovered_ms FROM "
                 "discovered_files WHERE relpath = ? AND file_hash = ? AND backend_rev = ?");
    s.bind(1, relpath).bind(2, file_hash).bind(3, backend_rev);
    if (!s.step()) return std::nullopt;
    return read_discovered(s);
  }

  std::vector<DiscoveredFile> latest_discoveries() override {
    std::lock_guard lock(mu_);
    SqliteStmt s(cache_,
                 "SELECT relpath, file_hash, backend_rev, run_id, discovered_ms FROM ("
                 "  SELECT *, ROW_NUMBER() OVER (PARTITION BY relpath"
                 "    ORDER BY discovered_ms DESC, run_id DESC) AS n FROM discovered_files)"
                 " WHERE n = 1 ORDER BY relpath");
    std::vector<DiscoveredFile> out;
    while (s.step()) out.push_back(read_discovered(s));
    return out;
  }

 private:
  // Inside a transaction: the result row and its ops land together or not at all.
  void insert_with_ops(const std::string& run_id, const TestResult& r) {
    SqliteStmt s(cache_, kInsertResultSql);
    s.reset();  // record_batch may hold the same cached statement, stepped but not yet reset
    bind_result(s, run_id, r);
    step_or_explain(s, [&] { return fmt::format("record {} in run {}", r.test_id, run_id); });
    SqliteStmt o(cache_, kInsertOpsSql);
    o.bind(1, run_id).bind(2, r.test_id).bind(3, join_ops(r.ops));
    step_or_explain(o,
                    [&] { return fmt::format("record ops of {} in run {}", r.test_id, run_id); });
  }

  static void bind_or_null(SqliteStmt& s, int i, const std::string& v) {
    if (v.empty())
      s.bind_null(i);
    else
      s.bind(i, v);
  }

  // SQLite's own message ("FOREIGN KEY constraint failed") names neither the file nor the row.
  // `what` is only called on failure: formatting it for every row showed in ingest profiles.
  template <typename What>
  void step_or_explain(SqliteStmt& s, What&& what) {
    try {
      s.step();
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}: {}", path_, what(), e.what()));
    }
  }

  template <typename F>
  void in_transaction(F&& f) {
    sqlite_exec(db_, "BEGIN IMMEDIATE");
    try {
      f();
      sqlite_exec(db_, "COMMIT");
    } catch (...) {
      sqlite_exec(db_, "ROLLBACK");
      throw;
    }
  }

  int schema_version() {
    SqliteStmt s(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
    return s.step() ? std::stoi(s.text(0)) : 0;
  }

  bool has_meta() {
    SqliteStmt s(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    return s.step();
  }

  void migrate() {
    const auto& steps = evidence_migrations();
    const int latest = static_cast<int>(steps.size());
    // Readers of an up-to-date database take no write lock, so `ootci judge` never waits for
    // a running ingest.
    if (has_meta() && schema_version() == latest) return;
    in_transaction([&] {
      sqlite_exec(db_,
                  "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      int current = schema_version();
      if (current > latest)
        throw Error(fmt::format("evidence schema version {} is newer than this ootci ({})", current,
                                latest));
      for (int i = current; i < latest; ++i) sqlite_exec(db_, steps[i]);
      SqliteStmt v(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)");
      v.bind(1, std::to_string(latest)).step();
    });
  }

  std::string path_;
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  SqliteStmtCache cache_{&db_};
};

}  // namespace

std::unique_ptr<EvidenceStore> EvidenceStore::open(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec)
    throw Error(
        fmt::format("{}: cannot create folder {}: {}", path, parent.string(), ec.message()));
  return std::make_unique<SqliteEvidenceStore>(path);
}

}  // namespace ootci
