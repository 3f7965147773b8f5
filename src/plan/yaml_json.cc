#include "plan/yaml_json.h"

#include <cmath>

namespace ootci {
namespace {

nlohmann::json plain_scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  double d = 0;
  // JSON has no NaN or infinity; such values stay text.
  if (YAML::convert<double>::decode(node, d) && std::isfinite(d)) return d;
  return s;
}

}  // namespace

nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsScalar()) {
    // yaml-cpp tags quoted scalars "!"; plain ones "?".
    if (node.Tag() == "!") return node.Scalar();
    return plain_scalar(node);
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto it = node.begin(); it != node.end(); ++it)
    out[it->first.Scalar()] = yaml_to_json(it->second);
  return out;
}

}  // namespace ootci
