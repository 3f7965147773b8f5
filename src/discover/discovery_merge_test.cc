#include "discover/discovery_merge.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "base/scratch_dir.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

TestResult variant(const std::string& name, Outcome outcome, std::vector<std::string> ops = {}) {
  TestResult r;
  r.test_id = "test/a.py::TestA::" + name;
  r.file = "test/a.py";
  r.cls = "TestA";
  r.name = name;
  r.outcome = outcome;
  r.ops = std::move(ops);
  return r;
}

// What one shard's `ootci discover --shard` leaves: a run of test/a.py marked discovered.
struct ShardDb {
  std::string run, shard;
  std::vector<TestResult> results;
  int64_t ended_ms = 1000;
  std::string backend = "reference", config_hash = "plan-1", file_hash = "hash-a";
  std::map<std::string, std::string> probes;
};

ShardDb shard_db(const std::string& run, const std::string& shard, std::vector<TestResult> results,
                 int64_t ended_ms = 1000) {
  ShardDb s;
  s.run = run;
  s.shard = shard;
  s.results = std::move(results);
  s.ended_ms = ended_ms;
  return s;
}

class DiscoveryMergeTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const ShardDb& s) {
    std::string path = dir_ + "/" + name;
    auto store = EvidenceStore::open(path);
    RunInfo run;
    run.id = s.run;
    run.backend = s.backend;
    run.config_hash = s.config_hash;
    run.shard = s.shard;
    run.status = RunStatus::kRunning;
    run.started_ms = s.ended_ms - 500;
    store->begin_run(run);
    store->record_batch(s.run, s.results);
    store->set_input_probes(s.run, s.probes);
    store->finish_run(s.run, s.ended_ms, RunStatus::kFinished, Conclusion::kFailure,
                      {{"plan_hash", "p"}});
    store->mark_discovered({"test/a.py", s.file_hash, "rev-1", s.run, s.ended_ms});
    return path;
  }

  std::string refusal(const std::vector<std::string>& inputs, const std::string& out) {
    try {
      merge_discoveries(inputs, out);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::string dir_ = make_temp_dir();
  std::string out_ = dir_ + "/merged.db";
};

TEST(ShardParts, ParsesSingleAndMergedPartsAndWholeFiles) {
  EXPECT_EQ(parse_shard_parts("2/4").parts, (std::set<int>{2}));
  EXPECT_EQ(parse_shard_parts("2/4").n, 4);
  EXPECT_EQ(parse_shard_parts("1+3/4").parts, (std::set<int>{1, 3}));
  EXPECT_EQ(parse_shard_parts("").parts, (std::set<int>{1}));
  EXPECT_EQ(parse_shard_parts("").n, 1);
  EXPECT_EQ(shard_parts_text({{1, 3}, 4}), "1+3/4");
  EXPECT_EQ(shard_parts_text({{1, 2, 3}, 3}), "");  // complete: as whole files
  for (const char* bad : {"0/4", "5/4", "x", "1+/4", "/4", "2/0"})
    EXPECT_THROW(parse_shard_parts(bad), Error) << bad;
}

TEST_F(DiscoveryMergeTest, ThreeShardsMergeIntoOneDiscoveryWithOpsAndProbes) {
  ShardDb first =
      shard_db("r-1", "1/3", {variant("test_x", Outcome::kPassed, {"aten::add.Tensor"})});
  first.probes = {{"test/a.py::TestA::test_x", "held: 2 shifts of its inputs"}};
  std::string a = write("s1.db", first);
  std::string b =
      write("s2.db", shard_db("r-2", "2/3", {variant("test_y", Outcome::kFailed, {"aten::mul"})}));
  std::string c =
      write("s3.db", shard_db("r-3", "3/3", {variant("test_z", Outcome::kSkipped)}, 2000));

  MergeReport r = merge_discoveries({a, b, c}, out_);
  EXPECT_EQ(r.results, 3u);
  EXPECT_EQ(r.conflicts, 0u);
  EXPECT_EQ(r.decision.kept.size(), 3u);
  EXPECT_EQ(shard_parts_text(r.decision.parts), "");

  auto store = EvidenceStore::open(out_);
  auto discoveries = store->latest_discoveries();
  ASSERT_EQ(discoveries.size(), 1u);
  EXPECT_EQ(discoveries[0].run_id, r.run_id);
  EXPECT_EQ(discoveries[0].discovered_ms, 2000);
  std::optional<RunInfo> run = store->run(r.run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->shard, "");  // complete: what an unsharded discovery is
  EXPECT_EQ(run->status, RunStatus::kFinished);
  EXPECT_EQ(run->manifest["merged_from"].size(), 3u);
  auto results = store->results(r.run_id);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].outcome, Outcome::kFailed);
  auto ops = store->ops_of_run(r.run_id);
  EXPECT_EQ(ops["test/a.py::TestA::test_x"], std::vector<std::string>{"aten::add.Tensor"});
  EXPECT_EQ(ops["test/a.py::TestA::test_y"], std::vector<std::string>{"aten::mul"});
  EXPECT_EQ(store->input_probes_of_run(r.run_id)["test/a.py::TestA::test_x"],
            "held: 2 shifts of its inputs");
  store.reset();

  // Again, and with the merge itself among the inputs: the same run, nothing doubled.
  MergeReport again = merge_discoveries({a, a, b, c}, out_);
  EXPECT_EQ(again.run_id, r.run_id);
  EXPECT_EQ(again.decision.already.size(), 1u);
  std::string copy = dir_ + "/merged-copy.db";
  fs::copy_file(out_, copy);
  MergeReport with_merge = merge_discoveries({copy, b}, out_);
  EXPECT_EQ(with_merge.run_id, r.run_id);  // the same three source runs
  EXPECT_EQ(with_merge.decision.already.size(), 1u);
  EXPECT_EQ(EvidenceStore::open(out_)->results(r.run_id).size(), 3u);
}

TEST_F(DiscoveryMergeTest, APartialMergeTakesTheMissingShardLater) {
  std::string a = write("s1.db", shard_db("r-1", "1/3", {variant("test_x", Outcome::kPassed)}));
  std::string b = write("s2.db", shard_db("r-2", "2/3", {variant("test_y", Outcome::kPassed)}));
  std::string c = write("s3.db", shard_db("r-3", "3/3", {variant("test_z", Outcome::kPassed)}));
  std::string partial = dir_ + "/partial.db";
  MergeReport first = merge_discoveries({a, c}, partial);
  EXPECT_EQ(shard_parts_text(first.decision.parts), "1+3/3");
  EXPECT_EQ(EvidenceStore::open(partial)->run(first.run_id)->shard, "1+3/3");
  MergeReport whole = merge_discoveries({partial, b}, out_);
  EXPECT_EQ(shard_parts_text(whole.decision.parts), "");
  EXPECT_EQ(whole.results, 3u);
  EXPECT_EQ(whole.run_id, merge_discoveries({a, b, c}, dir_ + "/direct.db").run_id);
}

TEST_F(DiscoveryMergeTest, AShardRunAgainReplacesItsEarlierRunWhole) {
  std::string a = write("s1.db", shard_db("r-1", "1/2", {variant("test_x", Outcome::kPassed)}));
  std::string killed = write(
      "s2.db",
      shard_db("r-2", "2/2",
               {variant("test_y", Outcome::kError), variant("test_w", Outcome::kPassed)}, 1000));
  std::string again =
      write("s2-again.db", shard_db("r-2b", "2/2", {variant("test_y", Outcome::kPassed)}, 3000));
  MergeReport r = merge_discoveries({a, again, killed}, out_);
  ASSERT_EQ(r.decision.replaced.size(), 1u);
  EXPECT_NE(r.decision.replaced[0].find("run r-2,"), std::string::npos) << r.decision.replaced[0];
  auto results = EvidenceStore::open(out_)->results(r.run_id);
  ASSERT_EQ(results.size(), 2u);  // test_w went with the replaced run
  EXPECT_EQ(results[1].name, "test_y");
  EXPECT_EQ(results[1].outcome, Outcome::kPassed);
}

TEST_F(DiscoveryMergeTest, RefusesEvidenceThatIsNotOneDiscovery) {
  std::string a = write("s1.db", shard_db("r-1", "1/2", {variant("test_x", Outcome::kPassed)}));
  ShardDb other = shard_db("r-2", "2/2", {variant("test_y", Outcome::kPassed)});
  other.backend = "another-device";
  EXPECT_NE(refusal({a, write("backend.db", other)}, out_).find("different backends"),
            std::string::npos);
  other = shard_db("r-3", "2/2", {variant("test_y", Outcome::kPassed)});
  other.config_hash = "plan-2";
  EXPECT_NE(refusal({a, write("plan.db", other)}, out_).find("different discovery plans"),
            std::string::npos);
  other = shard_db("r-4", "2/2", {variant("test_y", Outcome::kPassed)});
  other.file_hash = "hash-a2";
  EXPECT_NE(refusal({a, write("upstream.db", other)}, out_).find("different upstream revisions"),
            std::string::npos);
  EXPECT_NE(
      refusal({a, write("n.db", shard_db("r-5", "2/3", {variant("test_y", Outcome::kPassed)}))},
              out_)
          .find("2 and 3 ways"),
      std::string::npos);
  EXPECT_NE(
      refusal({a, write("whole.db", shard_db("r-6", "", {variant("test_y", Outcome::kPassed)}))},
              out_)
          .find("never with a whole discovery"),
      std::string::npos);
  EXPECT_NE(refusal({a, dir_ + "/missing.db"}, out_).find("missing.db: no such evidence database"),
            std::string::npos);
  EvidenceStore::open(dir_ + "/empty.db");
  EXPECT_NE(refusal({a, dir_ + "/empty.db"}, out_).find("empty.db: no discovered file"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(out_));  // nothing half-written

  // A merge cannot give back one of its shards; an --out with runs of its own is kept.
  std::string b = write("s2.db", shard_db("r-7", "2/2", {variant("test_y", Outcome::kPassed)}));
  std::string merged = dir_ + "/m.db";
  merge_discoveries({a, b}, merged);
  std::string b_again =
      write("s2b.db", shard_db("r-8", "2/2", {variant("test_y", Outcome::kFailed)}, 5000));
  EXPECT_NE(refusal({merged, b_again}, out_).find("cannot give back one of its shards"),
            std::string::npos);
  EXPECT_NE(refusal({a, b}, b_again).find("holds evidence of its own (run r-8)"),
            std::string::npos);
  EXPECT_EQ(EvidenceStore::open(b_again)->results("r-8").size(), 1u);
}

}  // namespace
}  // namespace ootci
