#pragma once
// Job history in bulk, for the demo data of `ootci relay seed`, benchmarks and tests. Not part of
// the Store interface: the relay itself writes jobs one callback at a time.
#include <vector>

#include "relay_store/store.h"

namespace ootci {

// Inserts the jobs and their rollups in one transaction; a key already stored (or repeated in
// `jobs`) keeps its first row. Nightly attempts supersede each other as insert_job's do.
void insert_jobs_bulk(Store& store, const std::vector<JobRecord>& jobs);

}  // namespace ootci
