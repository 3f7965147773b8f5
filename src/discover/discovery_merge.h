#pragma once
// `ootci evidence merge`: the evidence of a discovery sharded over machines (`ootci discover
// --shard K/N`, one database each) as one discovery (docs/select.md, "Sharded discovery").
// The merged database holds one run with every shard's variants, marked as the discovery of each
// file, so `select propose`, `select changed` and the reports read it as they read an unsharded
// discovery of the same files.
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

// One discovery run found in an input database: the files it discovered and the parts it holds.
struct MergePiece {
  std::string db;  // the input's path, for messages
  RunInfo run;
  std::vector<DiscoveredFile> files;  // sorted by relpath
};

// The parts a run's shard column says it holds: "2/4", a partial merge's "1+3/4", or "" for whole
// files, which is part 1 of 1 (as a complete merge is). Throws Error on anything else.
struct ShardParts {
  std::set<int> parts;
  int n = 1;
};
ShardParts parse_shard_parts(const std::string& shard);
std::string shard_parts_text(const ShardParts& parts);  // "" when complete

// What to merge, decided from the pieces alone (no I/O). Rules (docs/select.md):
// - one backend, one discovery plan (config hash), and per file one content hash and backend
//   revision: anything else is refused, naming both databases;
// - shards of one N, or whole discoveries, never both;
// - a run met twice (the same database given twice, or a database already merged into another
//   input) counts once: `already` names it;
// - a part held by two shard runs (a shard run again): the run that ended last is kept, whole,
//   and the other is named in `replaced`; a part held by a merge and by another run is refused
//   (merge the shards' own databases again).
struct MergeDecision {
  std::vector<MergePiece> kept;  // in run id order
  std::vector<std::string> already, replaced;
  ShardParts parts;  // what the kept pieces hold together
};
MergeDecision decide_merge(std::vector<MergePiece> pieces);

struct MergeReport {
  MergeDecision decision;
  std::string run_id;  // the merged run
  size_t results = 0;
  size_t conflicts = 0;  // variants two kept runs both recorded (the later run's record is kept)
};

// Reads every discovery of `inputs`, decides, and writes the merged run to `out` (created, or
// rebuilt when it holds nothing but an earlier merge). Throws Error on a refusal; `out` is then
// left as it was.
MergeReport merge_discoveries(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace ootci
