#include "plan/plan_json.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

using nlohmann::json;

json minimal_plan() {
  return {{"schema", "ootci.plan"},
          {"version", 1},
          {"backend", {{"device_type", "privateuseone"}}},
          {"files", {{{"path", "/abs/torch/test/test_a.py"}, {"relpath", "test/test_a.py"}}}}};
}

// The Error parse_plan_json throws for `text`; "" when it throws none.
std::string plan_text_error(const std::string& text) {
  try {
    parse_plan_json(text, "plan.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const json& plan) {
  return plan_text_error(plan.dump());
}

TEST(PlanJson, ThePlansOotciWritesAreRead) {
  for (const char* seed : {"docs-example.json", "discovery.json"}) {
    std::string path = source_dir() + "/fuzz/seeds/plan_json/" + seed;
    json plan = read_plan_json(path);
    EXPECT_EQ(plan, json::parse(read_file(path))) << seed;
  }
  EXPECT_EQ(parse_plan_json(minimal_plan().dump(), "p"), minimal_plan());
  json no_files = minimal_plan();
  no_files.erase("files");
  EXPECT_EQ(parse_error(no_files), "");  // the test process reads a plan without files as empty
  json float_version = minimal_plan();
  float_version["version"] = 1.0;
  EXPECT_EQ(parse_error(float_version), "");
}

TEST(PlanJson, ErrorsNameTheFileAndTheField) {
  std::string missing;
  try {
    read_plan_json("/nonexistent/plan.json");
  } catch (const Error& e) {
    missing = e.what();
  }
  EXPECT_EQ(missing, "/nonexistent/plan.json: cannot open file");
  EXPECT_EQ(plan_text_error("{\"schema\":"), "plan.json: not JSON");
  EXPECT_EQ(plan_text_error("[1]"), "plan.json: not a JSON object");
  auto with = [](const std::function<void(json&)>& edit) {
    json plan = minimal_plan();
    edit(plan);
    return parse_error(plan);
  };
  const std::string other = "plan.json: not an ootci.plan version 1 file";
  EXPECT_EQ(with([](json& p) { p["schema"] = "something.else"; }), other);
  EXPECT_EQ(with([](json& p) { p.erase("version"); }), other);
  EXPECT_EQ(with([](json& p) { p["version"] = 2; }), other);
  EXPECT_EQ(with([](json& p) { p.erase("backend"); }), "plan.json: backend: expected an object");
  EXPECT_EQ(with([](json& p) { p["backend"] = "npu"; }), "plan.json: backend: expected an object");
  EXPECT_EQ(with([](json& p) { p["backend"].erase("device_type"); }),
            "plan.json: backend.device_type: expected a non-empty string");
  EXPECT_EQ(with([](json& p) { p["backend"]["device_type"] = ""; }),
            "plan.json: backend.device_type: expected a non-empty string");
  EXPECT_EQ(with([](json& p) { p["files"] = {{"a", 1}}; }), "plan.json: files: expected a list");
  EXPECT_EQ(with([](json& p) { p["files"].push_back("test/b.py"); }),
            "plan.json: files[1]: expected an object");
  EXPECT_EQ(with([](json& p) { p["files"][0]["path"] = 3; }),
            "plan.json: files[0].path: expected a string");
  EXPECT_EQ(with([](json& p) { p["files"][0].erase("relpath"); }),
            "plan.json: files[0].relpath: expected a string");
}

// `ootci plan env --plan`'s check read schema and version with json::value(), which throws json's
// type_error for a value of another type ({"schema": 1}, {"version": "1"}): an uncaught
// exception that ended ootci with std::terminate instead of an error naming the file.
TEST(PlanJson, ASchemaOrVersionOfAnotherTypeIsAnotherFile) {
  const std::string other = "plan.json: not an ootci.plan version 1 file";
  for (const char* schema : {"1", "null", "[\"ootci.plan\"]", "{\"ootci.plan\": 1}", "true"}) {
    json plan = minimal_plan();
    plan["schema"] = json::parse(schema);
    EXPECT_EQ(parse_error(plan), other) << schema;
  }
  for (const char* version : {"\"1\"", "null", "[1]", "true", "1.5", "{}"}) {
    json plan = minimal_plan();
    plan["version"] = json::parse(version);
    EXPECT_EQ(parse_error(plan), other) << version;
  }
}

}  // namespace
}  // namespace ootci
