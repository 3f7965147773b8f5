#pragma once
// A selection split into waves and each wave into shards (docs/run.md, "Waves"). Wave 1 is what
// a selection runs first (files, tests, bases); wave 2 is a staged selection's second stage
// ("then"), which runs only when wave 1 raised (second_stage_reason). `ootci shards --select`
// prints the assignment and `ootci run --select --wave W --shard K/N` runs one part of it: both
// call wave_shards with the same evidence, so they agree.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"
#include "select/selection.h"
#include "select/shards.h"

namespace ootci {

// Wave 1 or 2 of `s`, limited to the plan's files (what `ootci run` would run of it). Wave 2
// leaves out the tests wave 1 already runs (its own ids and its whole files). Throws Error for
// another wave number.
Selection wave_of(const Selection& s, int wave, const std::vector<std::string>& plan_files);

// True when the wave runs nothing.
bool wave_empty(const Selection& wave);

// The wave's shards: its units (a whole file, or a file's bases, with the wave's single tests of
// that file, as one unit; every other test id alone) assigned longest first on their mean
// recorded durations (`test_durations`, as EvidenceStore::test_durations gives them). At most
// `count` shards and never an empty one: a wave of fewer units than `count` gets one shard per
// unit, and a wave without units none. Those shards are the first ones of the assignment over
// `count`, so a runner given either number agrees.
std::vector<Shard> wave_shards(const Selection& wave,
                               const std::map<std::string, double>& test_durations, int count);

// What `shard` (one of wave_shards(wave, ...)) runs, as a selection.
Selection shard_selection(const Selection& wave, const Shard& shard);

// Whether wave 2 runs, decided as `ootci run` decides its second stage (second_stage_reason) from
// wave 1's results, gathered from every shard, against the last green run (nullptr: none). The
// manifest's second_stage object: {"tests": wave 2's ids, "ran": bool, "why": text}. An empty
// wave 2 never runs.
nlohmann::json decide_wave2(const Selection& selection, const std::vector<std::string>& plan_files,
                            const std::vector<TestResult>& wave1,
                            const std::vector<TestResult>* last_green);

}  // namespace ootci
