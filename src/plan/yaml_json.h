#pragma once
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace ootci {

// A YAML subtree as JSON, for config sections ootci accepts and carries without interpreting.
// Plain scalars become null, booleans, integers or numbers when they read as such; quoted
// scalars stay strings.
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace ootci
