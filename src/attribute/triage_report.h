#pragma once
// What `ootci attribute` writes: CRCR's triage_verdict (schema 1, within the relay's caps) and a
// report for people: the combinations probed and the bisection steps (docs/attribute.md).
#include <nlohmann/json.hpp>
#include <string>

#include "attribute/attribution.h"

namespace ootci {

struct AttributionContext {
  std::string run_id;
  std::string green_run_id;    // "" without one
  int primary_executions = 0;  // test executions of the run itself, reruns included
  // A staged selection's second stage, the run manifest's second_stage ({"tests", "ran", "why"}):
  // the verdict says whether wave 2 ran and why. Null: not a staged run.
  nlohmann::json second_stage;
};

// Always valid for the relay: summary <= 1 KB, <= 10 evidence entries, <= 16 KB in all.
nlohmann::json triage_verdict(const Attribution& a, const AttributionInput& in,
                              const AttributionContext& ctx);

std::string triage_markdown(const Attribution& a, const AttributionInput& in,
                            const AttributionContext& ctx);

}  // namespace ootci
