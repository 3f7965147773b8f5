// The SQLite evidence store (docs/run.md, "Evidence store").
#include "evidence/evidence_store.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/error.h"
#include "base/text.h"
#include "sql/migrate.h"
#include "sql/record_columns.h"
#include "sql/sql_db.h"
#include "sql/sql_dialect.h"

namespace ootci {
namespace {

// Append only: entry i takes the schema from version i to i + 1. Never edit an entry that has
// shipped; add one.
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
      // The dtypes each op was called with on the device, "aten::add.Tensor:float32" pairs
      // joined by spaces ('' for ops recorded before this column: any dtype), and those of them
      // reached only while generating inputs.
      R"sql(
ALTER TABLE test_ops ADD COLUMN op_dtypes TEXT NOT NULL DEFAULT '';
ALTER TABLE test_ops ADD COLUMN input_op_dtypes TEXT NOT NULL DEFAULT '';
)sql",
      // What discovery's input probe found (`--probe-inputs`): '' not probed, "held: ..." or
      // the shift that failed the test.
      R"sql(
ALTER TABLE test_ops ADD COLUMN input_probe TEXT NOT NULL DEFAULT '';
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

// A stored run. Its status and verdict are parsed where they are read; text this ootci does not
// know stops the read with the run named, rather than guessing.
const RecordColumns<RunInfo>& run_columns() {
  static const RecordColumns<RunInfo> columns{
      column<&RunInfo::id>("id"),
      column<&RunInfo::backend>("backend"),
      column<&RunInfo::config_hash>("config_hash"),
      {"shard", [](const RunInfo& r) { return null_if_empty(r.shard); },
       [](RunInfo& r, const SqlRow& row, int i) { r.shard = row.text(i); }},
      {"status", [](const RunInfo& r) { return SqlParam::owned(to_string(r.status)); },
       [](RunInfo& r, const SqlRow& row, int i) {
         std::string text = row.text(i);
         auto status = parse_run_status(text);
         if (!status)
           throw Error(fmt::format("run {}: status '{}' is not running, finished or interrupted",
                                   r.id, text));
         r.status = *status;
       }},
      {"verdict",
       [](const RunInfo& r) {
         return r.verdict ? SqlParam::owned(to_string(*r.verdict)) : SqlParam(nullptr);
       },
       [](RunInfo& r, const SqlRow& row, int i) {
         r.verdict =
             parse_stored_conclusion(row.text(i), [&] { return "run " + r.id + ": verdict"; });
       }},
      column<&RunInfo::started_ms>("started_ms"),
      {"ended_ms", [](const RunInfo& r) { return r.ended_ms ? SqlParam(r.ended_ms) : nullptr; },
       [](RunInfo& r, const SqlRow& row, int i) { r.ended_ms = row.i64(i); }},
      {"manifest", [](const RunInfo& r) { return SqlParam::owned(r.manifest.dump()); },
       [](RunInfo& r, const SqlRow& row, int i) {
         std::string text = row.text(i);
         r.manifest = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
         if (r.manifest.is_discarded()) r.manifest = text;  // keep what was stored, unparsed
       }},
  };
  return columns;
}

// A test's stored result, without its run id (the statements bind that first) and its ops (a
// table of their own).
const RecordColumns<TestResult>& result_columns() {
  static const RecordColumns<TestResult> columns{
      column<&TestResult::test_id>("test_id"),
      column<&TestResult::file>("file"),
      column<&TestResult::cls>("class"),
      column<&TestResult::name>("name"),
      column<&TestResult::device>("device"),
      column<&TestResult::dtype>("dtype"),
      column<&TestResult::op>("op"),
      {"mode", [](const TestResult& t) { return SqlParam::owned(mode_text(t.mode)); },
       [](TestResult& t, const SqlRow& row, int i) { t.mode = parse_test_mode(row.text(i)); }},
      {"outcome", [](const TestResult& t) { return SqlParam::owned(to_string(t.outcome)); },
       [](TestResult& t, const SqlRow& row, int i) { t.outcome = outcome_or_error(row.text(i)); }},
      column<&TestResult::duration_s>("duration_s"),
      column<&TestResult::error_class>("error_class"),
      column<&TestResult::message>("message"),
      column<&TestResult::reruns>("reruns"),
      column<&TestResult::flaky>("flaky"),
      column<&TestResult::finished_ms>("finished_ms"),
      column<&TestResult::base>("base"),
  };
  return columns;
}

const RecordColumns<DiscoveredFile>& discovered_columns() {
  static const RecordColumns<DiscoveredFile> columns{
      column<&DiscoveredFile::relpath>("relpath"),
      column<&DiscoveredFile::file_hash>("file_hash"),
      column<&DiscoveredFile::backend_rev>("backend_rev"),
      column<&DiscoveredFile::run_id>("run_id"),
      column<&DiscoveredFile::discovered_ms>("discovered_ms"),
  };
  return columns;
}

const std::string& insert_result_sql() {
  static const std::string sql =
      fmt::format("INSERT OR REPLACE INTO results (run_id, {}) VALUES (?,{})",
                  result_columns().names(), result_columns().placeholders());
  return sql;
}

// Ops as one space-separated text: they are read back per run, never queried one by one.
constexpr const char* kInsertOpsSql =
    "INSERT OR REPLACE INTO test_ops (run_id, test_id, ops, op_dtypes, input_op_dtypes) "
    "VALUES (?,?,?,?,?)";

// Mean duration per test over its newest `window` results in finished runs.
// Mean of the last N results per test in finished runs. Results from whole (unsharded) runs are
// preferred: when a test has any, shard runs are ignored, so running shard 1 cannot change how
// shard 2 is assigned. Tests timed only by shard runs use those.
#define OOTCI_DURATIONS_SQL(WHERE)                                                          \
  "SELECT test_id, file, AVG(duration_s) FROM ("                                            \
  "  SELECT test_id, file, duration_s, whole, MAX(whole) OVER (PARTITION BY test_id) AS "   \
  "has_whole,"                                                                              \
  "    ROW_NUMBER() OVER (PARTITION BY test_id ORDER BY whole DESC, finished_ms DESC,"      \
  "      run_id DESC) AS n"                                                                 \
  "  FROM (SELECT r.test_id, r.file, r.duration_s, r.finished_ms, r.run_id,"                \
  "          (u.shard IS NULL OR u.shard = '') AS whole"                                    \
  "        FROM results r JOIN runs u ON u.id = r.run_id WHERE u.status = 'finished'" WHERE \
  ")) WHERE n <= ? AND whole = has_whole GROUP BY test_id"
constexpr const char* kDurationsSql = OOTCI_DURATIONS_SQL("");
constexpr const char* kCompletedDurationsSql =
    OOTCI_DURATIONS_SQL(" AND r.outcome NOT IN ('error', 'skipped')");
#undef OOTCI_DURATIONS_SQL

RunInfo read_run(const SqlRow& r) {
  return run_columns().read(r);
}

TestResult read_result(const SqlRow& r) {
  return result_columns().read(r);
}

std::string join_ops(const std::vector<std::string>& ops) {
  std::string out;
  for (const auto& op : ops) out += (out.empty() ? "" : " ") + op;
  return out;
}

DiscoveredFile read_discovered(const SqlRow& r) {
  return discovered_columns().read(r);
}

// Before the SQL layer the version was a `meta` row.
int meta_version(SqlTx& tx) {
  int version = 0;
  tx.each(table_exists_sql(SqlDialect::kSqlite), {"meta"}, [&](const SqlRow&) {
    tx.each("SELECT value FROM meta WHERE key = 'schema_version'", {},
            [&](const SqlRow& r) { version = std::stoi(r.text(0)); });
  });
  return version;
}

class SqliteEvidenceStore : public EvidenceStore {
  // Defined first: their return types are deduced.
  // The result row and its ops land together or not at all.
  static void insert_result(SqlTx& tx, const std::string& run_id, const TestResult& t) {
    std::vector<SqlParam> params{run_id};
    params.reserve(result_columns().size() + 1);
    result_columns().bind(t, params);
    tx.exec(insert_result_sql(), params);
    if (!t.ops.empty())
      tx.exec(kInsertOpsSql, {run_id, t.test_id, join_ops(t.ops), join_ops(t.op_dtypes),
                              join_ops(t.input_op_dtypes)});
  }

  // SQLite's own message ("FOREIGN KEY constraint failed") names neither the file nor the row.
  // `object` names what was written; it is only called on failure, since formatting a name for
  // every result showed in ingest profiles.
  template <typename Object, typename Fn>
  auto write(const char* action, Object&& object, Fn&& fn) {
    try {
      return db_->write(action, std::forward<Fn>(fn));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {} {}: {}", path_, action, object(), e.what()));
    }
  }

  template <typename Fn>
  auto read(Fn&& fn) {
    return db_->read("read", std::forward<Fn>(fn));
  }

 public:
  explicit SqliteEvidenceStore(const std::string& path) : path_(path) {
    try {
      db_ = open_sqlite_db(path, kBusyTimeoutMs, kConnectionPragmas);
      migrate(*db_, SchemaHistory{"evidence", evidence_migrations(), meta_version});
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", path_, e.what()));
    }
  }

  void begin_run(const RunInfo& run) override {
    // Beginning an existing id resumes it: its results stay and started_ms keeps the first start.
    write(
        "begin run", [&] { return run.id; },
        [&](SqlTx& tx) {
          tx.exec(fmt::format("INSERT INTO runs ({}) VALUES ({}) ON CONFLICT(id) DO UPDATE SET "
                              "backend = excluded.backend, config_hash = excluded.config_hash, "
                              "shard = excluded.shard, status = excluded.status, "
                              "verdict = excluded.verdict, ended_ms = excluded.ended_ms, "
                              "manifest = excluded.manifest",
                              run_columns().names(), run_columns().placeholders()),
                  run_columns().bind(run));
        });
  }

  void record(const std::string& run_id, const TestResult& result) override {
    write(
        "record", [&] { return result.test_id + " in run " + run_id; },
        [&](SqlTx& tx) { insert_result(tx, run_id, result); });
  }

  void forget(const std::string& run_id, const std::string& test_id) override {
    write(
        "forget", [&] { return test_id + " in run " + run_id; },
        [&](SqlTx& tx) {
          tx.exec("DELETE FROM results WHERE run_id = ? AND test_id = ?", {run_id, test_id});
          tx.exec("DELETE FROM test_ops WHERE run_id = ? AND test_id = ?", {run_id, test_id});
        });
  }

  void record_batch(const std::string& run_id, const std::vector<TestResult>& results) override {
    // Which result failed is only known inside; formatting a name for every row showed in ingest
    // profiles, so the failing one is remembered instead.
    const TestResult* current = nullptr;
    try {
      db_->write("record", [&](SqlTx& tx) {
        for (const TestResult& r : results) {
          current = &r;
          insert_result(tx, run_id, r);
        }
      });
    } catch (const Error& e) {
      throw Error(fmt::format("{}: record {} in run {}: {}", path_, current ? current->test_id : "",
                              run_id, e.what()));
    }
  }

  void finish_run(const std::string& run_id, int64_t ended_ms, RunStatus status,
                  std::optional<Conclusion> verdict, const nlohmann::json& manifest) override {
    int64_t changed = write(
        "finish run", [&] { return run_id; },
        [&](SqlTx& tx) {
          return tx.exec(
              "UPDATE runs SET ended_ms = ?, status = ?, verdict = ?, manifest = ? "
              "WHERE id = ?",
              {ended_ms, to_string(status), null_if_empty(to_string(verdict)), manifest.dump(),
               run_id});
        });
    if (changed == 0) throw Error(fmt::format("{}: finish run {}: no such run", path_, run_id));
  }

  std::optional<RunInfo> run(const std::string& run_id) override {
    return read([&](SqlTx& tx) {
      return tx.first(fmt::format("SELECT {} FROM runs WHERE id = ?", run_columns().names()),
                      {run_id}, read_run);
    });
  }

  void delete_run(const std::string& run_id) override {
    write(
        "delete run", [&] { return run_id; },
        [&](SqlTx& tx) {
          for (const char* sql :
               {"DELETE FROM test_ops WHERE run_id = ?", "DELETE FROM results WHERE run_id = ?",
                "DELETE FROM runs WHERE id = ?"})
            tx.exec(sql, {run_id});
        });
  }

  std::vector<RunInfo> runs(const std::string& backend) override {
    // An empty backend lists every run.
    return read([&](SqlTx& tx) {
      return tx.all(fmt::format("SELECT {} FROM runs WHERE ? = '' OR backend = ? "
                                "ORDER BY started_ms DESC, id DESC",
                                run_columns().names()),
                    {backend, backend}, read_run);
    });
  }

  std::vector<TestResult> results(const std::string& run_id) override {
    return read([&](SqlTx& tx) {
      return tx.all(fmt::format("SELECT {} FROM results WHERE run_id = ? ORDER BY test_id",
                                result_columns().names()),
                    {run_id}, read_result);
    });
  }

  std::set<std::string> finished_tests(const std::string& run_id) override {
    return read([&](SqlTx& tx) {
      std::set<std::string> out;
      tx.each("SELECT test_id FROM results WHERE run_id = ?", {run_id},
              [&](const SqlRow& r) { out.insert(r.text(0)); });
      return out;
    });
  }

  std::optional<RunInfo> last_green_run(const std::string& backend,
                                        const std::string& config_hash) override {
    return read([&](SqlTx& tx) {
      return tx.first(fmt::format("SELECT {} FROM runs WHERE backend = ? AND config_hash = ? "
                                  "AND status = 'finished' AND verdict = 'success' "
                                  "ORDER BY started_ms DESC, id DESC LIMIT 1",
                                  run_columns().names()),
                      {backend, config_hash}, read_run);
    });
  }

  std::vector<TestResult> history(const std::string& test_id, int limit) override {
    return read([&](SqlTx& tx) {
      return tx.all(fmt::format("SELECT {} FROM results WHERE test_id = ? "
                                "ORDER BY finished_ms DESC, run_id DESC LIMIT ?",
                                result_columns().names()),
                    {test_id, limit}, read_result);
    });
  }

  std::map<std::string, double> test_durations(int window) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, double> out;
      tx.each(kDurationsSql, {window}, [&](const SqlRow& r) { out.emplace(r.text(0), r.f64(2)); });
      return out;
    });
  }

  std::map<std::string, double> completed_durations(int window) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, double> out;
      tx.each(kCompletedDurationsSql, {window},
              [&](const SqlRow& r) { out.emplace(r.text(0), r.f64(2)); });
      return out;
    });
  }

  std::map<std::string, double> file_durations(int window) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, double> out;
      tx.each(kDurationsSql, {window}, [&](const SqlRow& r) { out[r.text(1)] += r.f64(2); });
      return out;
    });
  }

  std::map<std::string, int> breakages(int window) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, int> out;
      std::string test;  // the previous row's test and outcome
      Outcome before = Outcome::kError;
      // Oldest first within each test, so a pass followed by a failure is a breakage.
      tx.each(
          "SELECT test_id, outcome FROM ("
          "  SELECT r.test_id, r.outcome, r.finished_ms, r.run_id,"
          "    ROW_NUMBER() OVER (PARTITION BY r.test_id ORDER BY r.finished_ms DESC,"
          "      r.run_id DESC) AS n"
          "  FROM results r JOIN runs u ON u.id = r.run_id WHERE u.status = 'finished'"
          ") WHERE n <= ? ORDER BY test_id, finished_ms, run_id",
          {window}, [&](const SqlRow& r) {
            std::string id = r.text(0);
            Outcome outcome = outcome_or_error(r.text(1));
            if (id == test && before == Outcome::kPassed && is_failure(outcome)) ++out[id];
            test = std::move(id);
            before = outcome;
          });
      return out;
    });
  }

  std::map<std::string, FileOutcomes> file_outcomes(const std::string& run_id) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, FileOutcomes> out;
      tx.each(
          "SELECT file, outcome, COUNT(*), SUM(duration_s) FROM results WHERE run_id = ? "
          "GROUP BY file, outcome",
          {run_id}, [&](const SqlRow& r) {
            FileOutcomes& f = out[r.text(0)];
            f.counts[outcome_or_error(r.text(1))] += static_cast<int>(r.i64(2));
            f.seconds += r.f64(3);
          });
      return out;
    });
  }

  std::map<std::string, std::vector<std::string>> ops_of_run(const std::string& run_id) override {
    return read_op_lists(run_id, "ops");
  }

  std::map<std::string, std::vector<std::string>> op_dtypes_of_run(
      const std::string& run_id) override {
    return read_op_lists(run_id, "op_dtypes");
  }

  std::map<std::string, std::vector<std::string>> input_op_dtypes_of_run(
      const std::string& run_id) override {
    return read_op_lists(run_id, "input_op_dtypes");
  }

  std::map<std::string, std::string> input_probes_of_run(const std::string& run_id) override {
    return read([&](SqlTx& tx) {
      std::map<std::string, std::string> out;
      tx.each("SELECT test_id, input_probe FROM test_ops WHERE run_id = ? AND input_probe <> ''",
              {run_id}, [&](const SqlRow& r) { out[r.text(0)] = r.text(1); });
      return out;
    });
  }

  void set_input_probes(const std::string& run_id,
                        const std::map<std::string, std::string>& probes) override {
    write(
        "record", [&] { return fmt::format("the input probes of run {}", run_id); },
        [&](SqlTx& tx) {
          for (const auto& [test_id, probe] : probes)
            tx.exec("UPDATE test_ops SET input_probe = ? WHERE run_id = ? AND test_id = ?",
                    {probe, run_id, test_id});
        });
  }

  // One space-separated column of test_ops per test id; tests whose list is empty are absent.
  std::map<std::string, std::vector<std::string>> read_op_lists(const std::string& run_id,
                                                                const std::string& column) {
    return read([&](SqlTx& tx) {
      std::map<std::string, std::vector<std::string>> out;
      tx.each("SELECT test_id, " + column + " FROM test_ops WHERE run_id = ?", {run_id},
              [&](const SqlRow& r) {
                std::vector<std::string> items;
                for (const std::string& item : split(r.text(1), ' '))
                  if (!item.empty()) items.push_back(item);
                if (!items.empty()) out[r.text(0)] = std::move(items);
              });
      return out;
    });
  }

  void mark_discovered(const DiscoveredFile& f) override {
    write(
        "mark", [&] { return f.relpath + " discovered"; },
        [&](SqlTx& tx) {
          tx.exec(fmt::format("INSERT OR REPLACE INTO discovered_files ({}) VALUES ({})",
                              discovered_columns().names(), discovered_columns().placeholders()),
                  discovered_columns().bind(f));
        });
  }

  std::optional<DiscoveredFile> discovered(const std::string& relpath, const std::string& file_hash,
                                           const std::string& backend_rev) override {
    return read([&](SqlTx& tx) {
      return tx.first(fmt::format("SELECT {} FROM discovered_files WHERE relpath = ? AND "
                                  "file_hash = ? AND backend_rev = ?",
                                  discovered_columns().names()),
                      {relpath, file_hash, backend_rev}, read_discovered);
    });
  }

  std::vector<DiscoveredFile> latest_discoveries() override {
    return read([&](SqlTx& tx) {
      return tx.all(fmt::format("SELECT {} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY relpath "
                                "ORDER BY discovered_ms DESC, run_id DESC) AS n FROM "
                                "discovered_files) WHERE n = 1 ORDER BY relpath",
                                discovered_columns().names()),
                    {}, read_discovered);
    });
  }

 private:
  std::string path_;
  std::unique_ptr<SqlDb> db_;
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
