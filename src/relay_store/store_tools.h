#pragma once
// Store functions for demo data (`ootci relay seed`), benchmarks and tests, apart from the Store
// interface: the relay itself writes jobs one callback at a time and never lists tasks by kind.
#include <string>
#include <vector>

#include "relay_store/store.h"

namespace ootci {

// Inserts the jobs and their rollups in one transaction; a key already stored (or repeated in
// `jobs`) keeps its first row. Nightly attempts supersede each other as insert_job's do.
void insert_jobs_bulk(Store& store, const std::vector<JobRecord>& jobs);

// Every task of one kind, in id order, whatever its status.
std::vector<TaskItem> tasks_of_kind(Store& store, const std::string& kind);

}  // namespace ootci
