#include "base/yaml_doc.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(YamlMap, UnknownKeyNamesFileLineAndKey) {
  YamlDoc doc = load_yaml_text("relay.yaml", "listen: x\ndispatch:\n  max_atempts: 3\n");
  YamlMap root(doc, doc.root, "");
  root.str("listen");
  auto d = root.map("dispatch");
  EXPECT_EQ(error_of([&] { d->finish(); }), "relay.yaml:3:3: dispatch.max_atempts: unknown key");
}

TEST(YamlMap, WrongTypeNamesFileLineAndKey) {
  YamlDoc doc = load_yaml_text("relay.yaml", "dispatch:\n  max_attempts: many\n");
  YamlMap root(doc, doc.root, "");
  auto d = root.map("dispatch");
  EXPECT_EQ(error_of([&] { d->integer("max_attempts"); }),
            "relay.yaml:2:17: dispatch.max_attempts: expected an integer");
}

TEST(YamlMap, RangeIsChecked) {
  YamlDoc doc = load_yaml_text("c.yaml", "n: 0\n");
  YamlMap root(doc, doc.root, "");
  EXPECT_EQ(error_of([&] { root.integer("n", 1, 10); }), "c.yaml:1:4: n: must be between 1 and 10");
}

TEST(YamlMap, ParseErrorHasPosition) {
  EXPECT_EQ(error_of([] { load_yaml_text("bad.yaml", "a: [1, 2\n"); }).rfind("bad.yaml:", 0), 0u);
}

TEST(YamlMap, ReadsValues) {
  YamlDoc doc = load_yaml_text("c.yaml", "a: hi\nb: 3\nc: true\nd: [x, y]\n");
  YamlMap root(doc, doc.root, "");
  EXPECT_EQ(*root.str("a"), "hi");
  EXPECT_EQ(*root.integer("b"), 3);
  EXPECT_TRUE(*root.boolean("c"));
  EXPECT_EQ(root.str_list("d")->size(), 2u);
  EXPECT_FALSE(root.str("missing").has_value());
  EXPECT_NO_THROW(root.finish());
}

}  // namespace
}  // namespace ootci
