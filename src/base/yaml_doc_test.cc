#include "base/yaml_doc.h"

#include <gtest/gtest.h>

#include "testing/test_env.h"

namespace ootci {
namespace {

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

TEST(YamlMap, CollectModeRecordsEveryErrorAndKeepsGoing) {
  YamlDoc doc = load_yaml_text("c.yaml",
                               "a: [1]\n"
                               "b: many\n"
                               "c: yes please\n"
                               "d: [x, [y]]\n"
                               "e: scalar\n"
                               "f:\n"
                               "  g: 1\n"
                               "  typo: 2\n"
                               "h: fine\n"
                               "oops: 1\n");
  std::vector<std::string> errors;
  YamlMap root(doc, doc.root, "", &errors);
  EXPECT_FALSE(root.str("a"));
  EXPECT_FALSE(root.integer("b"));
  EXPECT_FALSE(root.boolean("c"));
  EXPECT_FALSE(root.str_list("d"));
  EXPECT_FALSE(root.map("e"));
  auto f = root.map("f");
  ASSERT_TRUE(f);
  EXPECT_EQ(*f->integer("g"), 1);
  f->finish();  // the child shares the parent's sink
  EXPECT_EQ(*root.str("h"), "fine");
  root.finish();
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "c.yaml:1:4: a: expected a string",
                        "c.yaml:2:4: b: expected an integer",
                        "c.yaml:3:4: c: expected true or false",
                        "c.yaml:4:8: d[1]: expected a string",
                        "c.yaml:5:4: e: expected a mapping",
                        "c.yaml:8:3: f.typo: unknown key",
                        "c.yaml:10:1: oops: unknown key",
                    }));
}

TEST(YamlMap, CollectModeReadsANonMappingAsEmpty) {
  YamlDoc doc = load_yaml_text("c.yaml", "- a\n- b\n");
  std::vector<std::string> errors;
  YamlMap root(doc, doc.root, "", &errors);
  EXPECT_FALSE(root.has("a"));
  EXPECT_FALSE(root.str("a"));
  root.finish();
  EXPECT_EQ(errors, (std::vector<std::string>{"c.yaml:1:1: (root): expected a mapping"}));
  // The document itself is left alone.
  EXPECT_TRUE(doc.root.IsSequence());
}

TEST(YamlMap, WithoutASinkTheFirstErrorThrows) {
  YamlDoc doc = load_yaml_text("c.yaml", "e: scalar\n");
  YamlMap root(doc, doc.root, "");
  EXPECT_EQ(error_of([&] { root.map("e"); }), "c.yaml:1:4: e: expected a mapping");
}

TEST(YamlWhere, ReadsFileLineAndColumnFromTheEnd) {
  YamlDoc doc = load_yaml_text("dir:with:colons/c.yaml", "a:\n  b: 1\n");
  YamlWhere w = parse_yaml_where(yaml_where(doc, doc.root["a"]["b"]));
  EXPECT_EQ(w.file, "dir:with:colons/c.yaml");
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.column, 6);
  YamlWhere bare = parse_yaml_where("c.yaml");
  EXPECT_EQ(bare.file, "c.yaml");
  EXPECT_EQ(bare.line, 0);
  EXPECT_EQ(parse_yaml_where("a:b:c").file, "a:b:c");  // not numbers: all of it is the name
}

}  // namespace
}  // namespace ootci
