#include "select/run_facts.h"

namespace ootci {

const RunFacts& RunFactCache::of(const std::string& run_id) {
  auto [it, fresh] = runs_.try_emplace(run_id);
  if (fresh) {
    RunFacts& f = it->second;
    f.ops = store_.ops_of_run(run_id);
    f.results = store_.results(run_id);
    f.op_dtypes = store_.op_dtypes_of_run(run_id);
    f.input_op_dtypes = store_.input_op_dtypes_of_run(run_id);
    if (with_input_probes_) f.input_probes = store_.input_probes_of_run(run_id);
  }
  return it->second;
}

}  // namespace ootci
