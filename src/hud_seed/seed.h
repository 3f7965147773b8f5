#pragma once
#include <cstdint>
#include <string>

#include "relay_store/store.h"

namespace ootci {

struct SeedOptions {
  int backends = 5;
  int deliveries = 2000;
  int days = 30;
  uint64_t seed = 1;
  bool xss_probe = false;  // adds a job and a failure message made of HTML, for escaping tests
  // Records an open demotion PR for the L3 backend, to see the HUD's banner (a relay with a
  // GitHub App would end it at its next sweep, finding no such PR).
  bool pending_demotion = false;
  int64_t now_ms = 0;
};

struct SeedResult {
  int64_t jobs = 0;
  std::string allowlist_yaml;  // the levels the seeded backends have
  std::string first_backend;
  int64_t busiest_pr = 0;
  int64_t superseded_attempts = 0;  // nightly attempts a re-run replaced (counted nowhere)
};

// Fills a store with realistic CRCR history: backends at L1–L4 with different reliability, PR and
// push deliveries over `days`, matrix jobs, queue and execution times with a long tail, failures,
// timeouts, re-run attempts (of PR jobs and of nightly runs), nightly runs, failed-test details
// and triage verdicts.
SeedResult seed_store(Store& store, const SeedOptions& options);

}  // namespace ootci
