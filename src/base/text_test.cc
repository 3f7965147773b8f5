#include "base/text.h"

#include <gtest/gtest.h>

namespace ootci {
namespace {

using Parts = std::vector<std::string>;

TEST(Text, TrimDropsAsciiWhitespaceAtTheEndsOnly) {
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim(" \n\f\v"), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim_end("  indented \n"), "  indented");
  EXPECT_EQ(trim_end("\n\n"), "");
}

TEST(Text, ShellQuoteMakesOneWordOfAnything) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's $HOME `x`"), "'it'\\''s $HOME `x`'");
}

TEST(Text, OneLineCollapsesEveryWhitespaceRunToOneSpace) {
  EXPECT_EQ(one_line("ERROR:  relation \"x\" does not exist\nLINE 1: SELECT\r\n\t* FROM x\n"),
            "ERROR: relation \"x\" does not exist LINE 1: SELECT * FROM x");
  EXPECT_EQ(one_line("  \n "), "");
  EXPECT_EQ(one_line("one"), "one");
}

TEST(Text, SplitKeepsNonEmptyPartsAsWritten) {
  EXPECT_EQ(split("a,,b, c,", ','), (Parts{"a", "b", " c"}));
  EXPECT_EQ(split("", ','), Parts{});
  EXPECT_EQ(split(",", ','), Parts{});
  EXPECT_EQ(split("one", ','), Parts{"one"});
}

TEST(Text, LinesDropTheirNewlineAndCarriageReturn) {
  EXPECT_EQ(lines("a\r\n\nb\n"), (Parts{"a", "", "b"}));
  EXPECT_EQ(lines("a\nb"), (Parts{"a", "b"}));
  EXPECT_EQ(lines(""), Parts{});
  EXPECT_EQ(lines("\n"), Parts{""});
}

TEST(Text, IndentationBlanknessAndCase) {
  EXPECT_EQ(indent_of("  \tx"), 3u);
  EXPECT_EQ(indent_of("   "), 3u);
  EXPECT_EQ(indent_of("x"), 0u);
  EXPECT_TRUE(is_blank(" \t\r"));
  EXPECT_TRUE(is_blank(""));
  EXPECT_FALSE(is_blank("  #"));
  EXPECT_TRUE(starts_after_indent(" \t# note", '#'));
  EXPECT_FALSE(starts_after_indent("x # note", '#'));
  EXPECT_FALSE(starts_after_indent("   ", '#'));
  EXPECT_EQ(lower("Hello-WORLD_1"), "hello-world_1");
}

TEST(Text, UrlEncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(url_encode("a-Z_0.~"), "a-Z_0.~");
  EXPECT_EQ(url_encode("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
  EXPECT_EQ(url_encode("\xC3\xA9"), "%C3%A9");
}

TEST(Text, PluralAddsAnSExceptForOne) {
  EXPECT_EQ(plural(1, "file"), "1 file");
  EXPECT_EQ(plural(0, "file"), "0 files");
  EXPECT_EQ(plural(12, "variant"), "12 variants");
}

TEST(Text, FirstLineSkipsBlankLinesAndCutsByCharacters) {
  EXPECT_EQ(first_line("RuntimeError: boom\nTraceback ..."), "RuntimeError: boom");
  EXPECT_EQ(first_line("\n  \n    assert x == y  \r\nmore"), "assert x == y");
  EXPECT_EQ(first_line(" \n\t"), "");
  EXPECT_EQ(first_line(std::string(300, 'x'), 160), std::string(160, 'x') + "...");
  EXPECT_EQ(first_line("short", 160), "short");
  // Characters, not bytes: "é" is two bytes and stays whole.
  EXPECT_EQ(first_line("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9...");
  EXPECT_EQ(first_line("\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9");
}

TEST(Text, TailCutsFromTheFrontAndSaysSo) {
  EXPECT_EQ(tail("short\n\n", 10), "short");
  EXPECT_EQ(tail("0123456789", 4), "...6789");
  EXPECT_EQ(short_sha("0123456789abcdef0123"), "0123456789ab");
  EXPECT_EQ(short_sha("abc"), "abc");
}

}  // namespace
}  // namespace ootci
