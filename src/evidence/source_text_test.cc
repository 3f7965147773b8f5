#include "evidence/source_text.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

TEST(SourceText, MasksCppCommentsAndStringContentsKeepingOffsets) {
  std::string text =
      "int a = 1'000'000; // c {\n"
      "const char* s = \"{\\\"}\"; char c = '{';\n"
      "auto r = R\"x(a \"quoted\" { )x\"; /* {\n"
      "} */ int b;\n";
  SourceText s(text, SourceLanguage::kCpp);
  ASSERT_EQ(s.masked().size(), text.size());
  EXPECT_EQ(s.masked().find('{'), std::string::npos) << s.masked();
  EXPECT_EQ(s.masked().find('}'), std::string::npos) << s.masked();
  EXPECT_NE(s.masked().find("int b;"), std::string::npos);
  EXPECT_NE(s.masked().find("1'000'000"), std::string::npos);  // digit separators are no quotes
  auto str = s.string_at(text.find("const"), text.size());
  ASSERT_TRUE(str);
  EXPECT_EQ(str->first, "{\\\"}");
  EXPECT_EQ(s.line_count(), 4);
  EXPECT_EQ(s.line_of(text.find("int b")), 4);
}

TEST(SourceText, CodeLinesIgnoreCommentsButNotDirectives) {
  SourceText cpp("#include <x.h>\n// only a comment\n\nint f();\n  /* c */\n",
                 SourceLanguage::kCpp);
  EXPECT_TRUE(cpp.is_code_line(1));
  EXPECT_FALSE(cpp.is_code_line(2));
  EXPECT_FALSE(cpp.is_code_line(3));
  EXPECT_TRUE(cpp.is_code_line(4));
  EXPECT_FALSE(cpp.is_code_line(5));
  SourceText py("# comment\nx = '#'\n\"\"\"doc\n{\"\"\"\n", SourceLanguage::kPython);
  EXPECT_FALSE(py.is_code_line(1));
  EXPECT_TRUE(py.is_code_line(2));
  EXPECT_EQ(py.masked().find('{'), std::string::npos);
}

TEST(SourceText, CppDefinitionsSkipCallsControlFlowAndDeclarations) {
  std::string text =
      "namespace at::native {\n"                                        // 1
      "Tensor helper(const Tensor& x);\n"                               // 2
      "template <typename T>\n"                                         // 3
      "static Tensor add_impl(const Tensor& a) const noexcept {\n"      // 4
      "  if (a.defined()) { return helper(a); }\n"                      // 5
      "  return a.add(helper(a));\n"                                    // 6
      "}\n"                                                             // 7
      "TORCH_IMPL_FUNC(add_out) (const Tensor& self, Tensor& out) {\n"  // 8
      "  for (int i = 0; i < 2; ++i) { }\n"                             // 9
      "}\n"                                                             // 10
      "auto trailing(int x) -> std::vector<int> {\n"                    // 11
      "  return {};\n"                                                  // 12
      "}\n"                                                             // 13
      "}\n";
  SourceText s(text, SourceLanguage::kCpp);
  auto defs = cpp_function_definitions(s);
  ASSERT_EQ(defs.size(), 3u);
  EXPECT_EQ(defs[0].name, "add_impl");
  EXPECT_EQ(defs[0].first_line, 3);  // the template header belongs to it
  EXPECT_EQ(defs[0].last_line, 7);
  EXPECT_EQ(defs[1].name, "add_out");
  EXPECT_EQ(defs[1].first_line, 8);
  EXPECT_EQ(defs[1].last_line, 10);
  EXPECT_EQ(defs[2].name, "trailing");
  EXPECT_EQ(cpp_functions_at(s, 9), std::vector<std::string>{"add_out"});
  EXPECT_TRUE(cpp_functions_at(s, 2).empty());
  EXPECT_FALSE(cpp_function_lines(s, "helper"));
  EXPECT_EQ(cpp_function_lines(s, "at::native::add_impl"), std::make_pair(3, 7));
}

TEST(SourceText, PythonFunctionsEndWhereTheIndentationDoes) {
  std::string text =
      "class A:\n"           // 1
      "    @staticmethod\n"  // 2
      "    def f(x,\n"       // 3
      "          y):\n"      // 4
      "        z = 1\n"      // 5
      "\n"                   // 6
      "        return z\n"   // 7
      "    def g(self):\n"   // 8
      "        pass\n";      // 9
  SourceText s(text, SourceLanguage::kPython);
  EXPECT_EQ(python_function_lines(s, "f"), std::make_pair(2, 7));
  EXPECT_EQ(python_function_lines(s, "g"), std::make_pair(8, 9));
  EXPECT_FALSE(python_function_lines(s, "A"));
}

}  // namespace
}  // namespace ootci
