#include "discover/discovery_merge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "base/sha256.h"
#include "base/text.h"

namespace fs = std::filesystem;

namespace ootci {

ShardParts parse_shard_parts(const std::string& shard) {
  ShardParts out;
  if (shard.empty()) {
    out.parts = {1};
    return out;
  }
  auto bad = [&] {
    return Error(fmt::format("shard \"{}\": expected K/N or K+K+.../N with 1 <= K <= N", shard));
  };
  // A whole number filling `text`, or nullopt.
  auto number = [](std::string_view text) -> std::optional<int> {
    int v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return v;
  };
  size_t slash = shard.rfind('/');
  if (slash == std::string::npos) throw bad();
  std::optional<int> n = number(std::string_view(shard).substr(slash + 1));
  if (!n || *n < 1) throw bad();
  out.n = *n;
  std::string_view head = std::string_view(shard).substr(0, slash);
  // split() drops empty pieces, which are malformed here: "+1/4", "1+/4", "1++2/4", "/4".
  if (head.empty() || head.front() == '+' || head.back() == '+' ||
      head.find("++") != std::string_view::npos)
    throw bad();
  for (std::string_view part : split(head, '+')) {
    std::optional<int> k = number(part);
    if (!k || *k < 1 || *k > out.n) throw bad();
    out.parts.insert(*k);
  }
  return out;
}

std::string shard_parts_text(const ShardParts& p) {
  if (static_cast<int>(p.parts.size()) == p.n) return "";
  return fmt::format("{}/{}", fmt::join(p.parts, "+"), p.n);
}

namespace {

std::string describe(const MergePiece& p) {
  std::string shard = p.run.shard.empty() ? "whole files" : "shard " + p.run.shard;
  return fmt::format("{} (run {}, {})", p.db, p.run.id, shard);
}

// The runs a merged run was made of (its manifest's merged_from), or the run itself.
std::vector<std::string> source_runs(const MergePiece& p) {
  std::vector<std::string> out;
  const auto& from = p.run.manifest.value("merged_from", nlohmann::json::array());
  for (const auto& m : from) out.push_back(m.value("run", ""));
  if (out.empty()) out.push_back(p.run.id);
  return out;
}

// The parts a piece holds: a merge keeps them in its manifest, since a complete merge's shard
// column is "" (whole files) and no longer says how many shards made it.
ShardParts piece_parts(const MergePiece& p) {
  return parse_shard_parts(p.run.manifest.value("merged_parts", p.run.shard));
}

bool ended_before(const MergePiece& a, const MergePiece& b) {
  if (a.run.ended_ms != b.run.ended_ms) return a.run.ended_ms < b.run.ended_ms;
  return a.run.id < b.run.id;
}

// One backend, one discovery plan, and per file one content and backend revision.
void check_same_discovery(const std::vector<MergePiece>& pieces) {
  const MergePiece& first = pieces.front();
  std::map<std::string, std::pair<const DiscoveredFile*, const MergePiece*>> seen;
  for (const MergePiece& p : pieces) {
    if (p.run.backend != first.run.backend)
      throw Error(fmt::format(
          "{} is evidence of backend '{}', {} of backend '{}': evidence of different backends is "
          "not merged",
          describe(first), first.run.backend, describe(p), p.run.backend));
    if (p.run.config_hash != first.run.config_hash)
      throw Error(fmt::format(
          "{} and {} ran different discovery plans ({} and {}): shards must discover the same "
          "files with the same ootci.yaml",
          describe(first), describe(p), first.run.config_hash, p.run.config_hash));
    for (const DiscoveredFile& f : p.files) {
      auto [it, fresh] = seen.emplace(f.relpath, std::make_pair(&f, &p));
      if (fresh) continue;
      const auto& [other, by] = it->second;
      if (other->file_hash != f.file_hash)
        throw Error(fmt::format(
            "{}: {} discovered content {}, {} content {}: evidence of different upstream "
            "revisions is not merged",
            f.relpath, describe(*by), other->file_hash, describe(p), f.file_hash));
      if (other->backend_rev != f.backend_rev)
        throw Error(fmt::format(
            "{}: {} discovered backend revision {}, {} revision {}: evidence of different "
            "backend revisions is not merged",
            f.relpath, describe(*by), other->backend_rev, describe(p), f.backend_rev));
    }
  }
}

}  // namespace

MergeDecision decide_merge(std::vector<MergePiece> pieces) {
  if (pieces.empty()) throw Error("nothing to merge: the inputs hold no discovered file");
  std::sort(pieces.begin(), pieces.end(), ended_before);
  MergeDecision d;

  // A run met twice, or already inside a merged input, counts once.
  std::set<std::string> inside;
  for (const MergePiece& p : pieces)
    if (p.run.manifest.contains("merged_from"))
      for (const auto& id : source_runs(p)) inside.insert(id);
  std::vector<MergePiece> unique;
  std::set<std::string> seen;
  for (MergePiece& p : pieces) {
    if (!seen.insert(p.run.id).second || inside.count(p.run.id)) {
      d.already.push_back(describe(p));
      continue;
    }
    unique.push_back(std::move(p));
  }
  check_same_discovery(unique);

  // Parts, in the order the runs ended: a later single-part run replaces an earlier one.
  std::map<int, size_t> holder;  // part -> index into unique
  std::vector<bool> keep(unique.size(), true);
  d.parts.n = 0;
  for (size_t i = 0; i < unique.size(); ++i) {
    const MergePiece& p = unique[i];
    ShardParts sp = piece_parts(p);
    if (d.parts.n == 0) d.parts.n = sp.n;
    if (sp.n != d.parts.n)
      throw Error(fmt::format(
          "{} and {} split the files {} and {} ways: only shards of one --shard K/N count merge "
          "(and never with a whole discovery)",
          describe(unique.front()), describe(p), d.parts.n, sp.n));
    for (int k : sp.parts) {
      auto it = holder.find(k);
      if (it != holder.end() && keep[it->second]) {
        const MergePiece& q = unique[it->second];
        if (piece_parts(q).parts.size() > 1 || sp.parts.size() > 1)
          throw Error(fmt::format(
              "part {}/{} is in both {} and {}: a merge cannot give back one of its shards; merge "
              "the shards' own databases again",
              k, sp.n, describe(q), describe(p)));
        keep[it->second] = false;
        d.replaced.push_back(fmt::format("{}, by {} which ended later", describe(q), describe(p)));
      }
      holder[k] = i;
    }
  }
  for (size_t i = 0; i < unique.size(); ++i)
    if (keep[i]) d.kept.push_back(std::move(unique[i]));
  for (const auto& [k, i] : holder) d.parts.parts.insert(k);
  std::sort(d.kept.begin(), d.kept.end(),
            [](const MergePiece& a, const MergePiece& b) { return a.run.id < b.run.id; });
  return d;
}

namespace {

std::vector<MergePiece> read_pieces(const std::string& path) {
  if (!fs::is_regular_file(path)) throw Error(fmt::format("{}: no such evidence database", path));
  auto store = EvidenceStore::open(path);
  std::map<std::string, MergePiece> by_run;
  for (const DiscoveredFile& f : store->latest_discoveries()) {
    MergePiece& p = by_run[f.run_id];
    if (p.db.empty()) {
      std::optional<RunInfo> run = store->run(f.run_id);
      if (!run)
        throw Error(fmt::format("{}: {} names run {}, which it lacks", path, f.relpath, f.run_id));
      p.db = path;
      p.run = *run;
    }
    p.files.push_back(f);
  }
  if (by_run.empty())
    throw Error(fmt::format(
        "{}: no discovered file (a discovery that was stopped or killed marks none; run that "
        "shard again)",
        path));
  std::vector<MergePiece> out;
  for (auto& [id, p] : by_run) out.push_back(std::move(p));
  return out;
}

// `out` may be replaced only when all it holds is merges this command wrote.
void check_out_is_a_merge(const std::string& out, const std::string& backend) {
  if (!fs::exists(out)) return;
  auto store = EvidenceStore::open(out);
  for (const RunInfo& r : store->runs(backend))
    if (!r.manifest.contains("merged_from"))
      throw Error(fmt::format(
          "--out {} holds evidence of its own (run {}); merge into a new file, or into one that "
          "holds only an earlier merge",
          out, r.id));
}

struct Merged {
  TestResult result;
  std::optional<std::string> probe;
};

// Every kept piece's variants with their ops and probes; a variant two pieces recorded keeps the
// record of the run that ended last.
std::map<std::string, Merged> read_variants(const std::vector<MergePiece>& kept,
                                            size_t& conflicts) {
  std::vector<const MergePiece*> by_end;
  for (const MergePiece& p : kept) by_end.push_back(&p);
  std::sort(by_end.begin(), by_end.end(),
            [](const MergePiece* a, const MergePiece* b) { return ended_before(*a, *b); });
  std::map<std::string, Merged> out;
  for (const MergePiece* p : by_end) {
    auto store = EvidenceStore::open(p->db);
    auto ops = store->ops_of_run(p->run.id);
    auto op_dtypes = store->op_dtypes_of_run(p->run.id);
    auto input_op_dtypes = store->input_op_dtypes_of_run(p->run.id);
    auto probes = store->input_probes_of_run(p->run.id);
    for (TestResult& r : store->results(p->run.id)) {
      if (auto it = ops.find(r.test_id); it != ops.end()) r.ops = it->second;
      if (auto it = op_dtypes.find(r.test_id); it != op_dtypes.end()) r.op_dtypes = it->second;
      if (auto it = input_op_dtypes.find(r.test_id); it != input_op_dtypes.end())
        r.input_op_dtypes = it->second;
      Merged m{r, std::nullopt};
      if (auto it = probes.find(r.test_id); it != probes.end()) m.probe = it->second;
      // A whole-file error is met by every shard that collected the file: not a conflict.
      if (out.count(r.test_id) && !r.name.empty()) ++conflicts;
      out[r.test_id] = std::move(m);
    }
  }
  return out;
}

RunInfo merged_run(const MergeDecision& d, size_t results) {
  RunInfo info;
  // Named by the shard runs it holds, however they were merged.
  std::set<std::string> sources;
  for (const MergePiece& p : d.kept)
    for (const auto& id : source_runs(p)) sources.insert(id);
  info.id = fmt::format("merge-{}",
                        sha256_hex(fmt::format("{}", fmt::join(sources, "\n"))).substr(0, 12));
  const MergePiece& first = d.kept.front();
  info.backend = first.run.backend;
  info.config_hash = first.run.config_hash;
  info.shard = shard_parts_text(d.parts);
  info.status = RunStatus::kFinished;
  info.started_ms = first.run.started_ms;
  info.verdict = first.run.verdict;
  nlohmann::json from = nlohmann::json::array();
  const MergePiece* newest = &first;
  for (const MergePiece& p : d.kept) {
    info.started_ms = std::min(info.started_ms, p.run.started_ms);
    info.ended_ms = std::max(info.ended_ms, p.run.ended_ms);
    if (p.run.verdict == Conclusion::kFailure) info.verdict = Conclusion::kFailure;
    if (ended_before(*newest, p)) newest = &p;
    const auto& inner = p.run.manifest.value("merged_from", nlohmann::json::array());
    if (inner.empty()) from.push_back({{"db", p.db}, {"run", p.run.id}, {"shard", p.run.shard}});
    for (const auto& m : inner) from.push_back(m);
  }
  info.manifest = newest->run.manifest;
  info.manifest["merged_from"] = from;
  info.manifest["merged_parts"] = fmt::format("{}/{}", fmt::join(d.parts.parts, "+"), d.parts.n);
  info.manifest["merged_results"] = results;
  return info;
}

void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

}  // namespace

MergeReport merge_discoveries(const std::vector<std::string>& inputs, const std::string& out) {
  std::vector<MergePiece> pieces;
  for (const auto& path : inputs)
    for (MergePiece& p : read_pieces(path)) pieces.push_back(std::move(p));
  MergeReport report;
  report.decision = decide_merge(std::move(pieces));
  const MergeDecision& d = report.decision;
  check_out_is_a_merge(out, d.kept.front().run.backend);

  std::map<std::string, Merged> variants = read_variants(d.kept, report.conflicts);
  report.results = variants.size();
  RunInfo info = merged_run(d, variants.size());
  report.run_id = info.id;

  // Written beside `out` and renamed over it, so a failed merge leaves `out` as it was.
  std::string tmp = out + ".merging";
  remove_database(tmp);
  {
    auto store = EvidenceStore::open(tmp);
    RunInfo running = info;
    running.status = RunStatus::kRunning;
    running.ended_ms = 0;
    store->begin_run(running);
    std::vector<TestResult> results;
    std::map<std::string, std::string> probes;
    for (auto& [id, m] : variants) {
      if (m.probe) probes[id] = *m.probe;
      results.push_back(std::move(m.result));
    }
    store->record_batch(info.id, results);
    store->set_input_probes(info.id, probes);
    store->finish_run(info.id, info.ended_ms, info.status, info.verdict, info.manifest);
    std::map<std::string, DiscoveredFile> files;
    for (const MergePiece& p : d.kept)
      for (const DiscoveredFile& f : p.files) {
        DiscoveredFile& merged = files[f.relpath];
        int64_t latest = std::max(merged.discovered_ms, f.discovered_ms);
        merged = f;
        merged.run_id = info.id;
        merged.discovered_ms = latest;
      }
    for (const auto& [relpath, f] : files) store->mark_discovered(f);
  }
  // A stale journal beside `out` would be read into the new database.
  fs::remove(out + "-wal");
  fs::remove(out + "-shm");
  fs::rename(tmp, out);
  return report;
}

}  // namespace ootci
