#include "discover/variant_evidence.h"

#include <algorithm>
#include <map>

namespace ootci {

const BaseEvidence* FileEvidence::find(const std::string& base) const {
  auto it =
      std::lower_bound(bases.begin(), bases.end(), base,
                       [](const BaseEvidence& b, const std::string& key) { return b.base < key; });
  return it != bases.end() && it->base == base ? &*it : nullptr;
}

FileEvidence group_evidence(const std::string& relpath, const std::vector<TestResult>& results,
                            const std::map<std::string, std::vector<std::string>>& ops,
                            const std::map<std::string, std::string>& input_probes) {
  std::map<std::string, std::map<std::string, VariantEvidence>> by_base;
  for (const TestResult& r : results) {
    if (r.base.empty() || r.file != relpath) continue;
    VariantEvidence& v = by_base[r.base][r.test_id];
    if (v.test_id.empty()) {
      v.test_id = r.test_id;
      v.name = r.name;
      v.op = r.op;
      v.dtype = r.dtype;
      auto it = ops.find(r.test_id);
      if (it != ops.end()) v.ops = it->second;
      std::sort(v.ops.begin(), v.ops.end());
      if (auto p = input_probes.find(r.test_id); p != input_probes.end()) v.input_probe = p->second;
    }
    v.results.push_back(r);
  }
  FileEvidence f;
  f.relpath = relpath;
  for (auto& [base, variants] : by_base) {
    BaseEvidence b;
    b.base = base;
    for (auto& [id, v] : variants) b.variants.push_back(std::move(v));
    f.bases.push_back(std::move(b));
  }
  return f;
}

std::vector<FileEvidence> load_file_evidence(EvidenceStore& store,
                                             const std::vector<DiscoveredFile>& files,
                                             size_t max_later_runs) {
  std::map<std::string, std::vector<TestResult>> results_of;  // run id -> results, loaded once
  auto results = [&](const std::string& run_id) -> const std::vector<TestResult>& {
    auto it = results_of.find(run_id);
    if (it == results_of.end()) it = results_of.emplace(run_id, store.results(run_id)).first;
    return it->second;
  };
  std::map<std::string, std::map<std::string, std::vector<std::string>>> ops_of;
  std::map<std::string, std::map<std::string, std::string>> probes_of;
  std::vector<FileEvidence> out;
  for (const DiscoveredFile& d : files) {
    std::optional<RunInfo> discovery = store.run(d.run_id);
    if (!discovery) continue;
    std::vector<std::string> run_ids;
    for (const RunInfo& r : store.runs(discovery->backend)) {
      if (run_ids.size() == max_later_runs) break;
      if (r.id == d.run_id || r.status == RunStatus::kRunning ||
          r.started_ms < discovery->started_ms)
        continue;
      run_ids.push_back(r.id);
    }
    run_ids.push_back(d.run_id);

    // The discovery decides which variants exist; later runs only add results to them.
    std::map<std::string, std::string> base_of;
    for (const TestResult& r : results(d.run_id))
      if (r.file == d.relpath && !r.base.empty()) base_of[r.test_id] = r.base;
    std::vector<TestResult> ordered;
    for (const auto& id : run_ids)
      for (const TestResult& r : results(id)) {
        auto it = r.file == d.relpath ? base_of.find(r.test_id) : base_of.end();
        if (it == base_of.end()) continue;
        ordered.push_back(r);
        ordered.back().base = it->second;  // runs before schema 2 stored no base
      }
    if (!ops_of.count(d.run_id)) {
      ops_of[d.run_id] = store.ops_of_run(d.run_id);
      probes_of[d.run_id] = store.input_probes_of_run(d.run_id);
    }
    FileEvidence f = group_evidence(d.relpath, ordered, ops_of[d.run_id], probes_of[d.run_id]);
    f.run_ids = run_ids;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ootci
