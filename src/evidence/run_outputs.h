#pragma once
// Files a run leaves behind besides the evidence store: merged JUnit XML and the manifest.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/evidence_store.h"

namespace ootci {

// One <testsuite> in the layout pytest writes, so CI tools that read pytest's JUnit read this;
// the plan's mode/op/dtype and reruns/flaky are <properties>.
void write_junit(const std::string& path, const std::vector<TestResult>& results);

void write_json_file(const std::string& path, const nlohmann::json& value);

}  // namespace ootci
