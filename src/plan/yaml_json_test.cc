#include "plan/yaml_json.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(YamlJson, PlainScalarsAreTypedQuotedOnesStayStrings) {
  YAML::Node n = YAML::Load(R"(
a: [1, -2.5, true, false, ~, text, "3", 'true', 1e-3, .inf]
b: {nested: {x: null}}
)");
  EXPECT_EQ(yaml_to_json(n), nlohmann::json::parse(R"({
      "a": [1, -2.5, true, false, null, "text", "3", "true", 0.001, ".inf"],
      "b": {"nested": {"x": null}}})"));
}

}  // namespace
}  // namespace ootci
