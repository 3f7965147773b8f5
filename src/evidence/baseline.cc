#include "evidence/baseline.h"

namespace ootci {

Baseline baseline_of(EvidenceStore& store, const RunInfo& run) {
  Baseline b;
  b.run = store.last_green_run(run.backend, run.config_hash);
  if (b.run && b.run->id == run.id) {
    b.run.reset();
    for (const RunInfo& r : store.runs(run.backend))  // newest first
      if (r.id != run.id && r.config_hash == run.config_hash && r.green()) {
        b.run = r;
        break;
      }
  }
  if (b.run) b.results = store.results(b.run->id);
  return b;
}

}  // namespace ootci
