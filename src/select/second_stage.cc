#include "select/second_stage.h"

#include <fmt/format.h>

#include <map>

namespace ootci {

std::optional<std::string> second_stage_reason(const std::vector<TestResult>& first,
                                               const std::vector<TestResult>* last_green) {
  std::map<std::string, const TestResult*> before;
  if (last_green)
    for (const auto& r : *last_green) before[r.test_id] = &r;
  for (const auto& r : first) {
    if (!is_failure(r.outcome)) continue;
    if (r.error_class == "AssertionError") continue;
    if (auto b = before.find(r.test_id); b != before.end() && is_failure(b->second->outcome) &&
                                         b->second->error_class == r.error_class)
      continue;
    return fmt::format("{} {} with {}", r.test_id, failed_verb(r.outcome), error_or_outcome(r));
  }
  return std::nullopt;
}

}  // namespace ootci
