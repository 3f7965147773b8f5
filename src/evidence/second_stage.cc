#include "evidence/second_stage.h"

#include <fmt/format.h>

#include <map>

namespace ootci {

std::optional<std::string> second_stage_reason(const std::vector<TestResult>& first,
                                               const std::vector<TestResult>* last_green) {
  std::map<std::string, const TestResult*> before;
  if (last_green)
    for (const auto& r : *last_green) before[r.test_id] = &r;
  for (const auto& r : first) {
    if (r.outcome != "failed" && r.outcome != "error") continue;
    if (r.error_class == "AssertionError") continue;
    if (auto b = before.find(r.test_id);
        b != before.end() && (b->second->outcome == "failed" || b->second->outcome == "error") &&
        b->second->error_class == r.error_class)
      continue;
    return fmt::format("{} {} with {}", r.test_id, r.outcome == "error" ? "errored" : "failed",
                       r.error_class.empty() ? r.outcome : r.error_class);
  }
  return std::nullopt;
}

}  // namespace ootci
