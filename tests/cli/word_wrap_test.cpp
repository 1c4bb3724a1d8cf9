// Streaming word wrap: words move whole to the next line, pieces split anywhere (inside a
// word, inside a UTF-8 sequence) give the same output, wide characters count two columns.
#include <gtest/gtest.h>

#include "cli/word_wrap.h"

namespace hearth::cli {
namespace {

std::string wrap_all(int width, const std::vector<std::string>& pieces) {
  WordWrapper w(width);
  std::string out;
  for (const auto& p : pieces) out += w.feed(p);
  return out + w.flush();
}

// Every way of cutting `text` into two pieces gives `expected`.
void expect_any_split(int width, const std::string& text, const std::string& expected) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(wrap_all(width, {text.substr(0, cut), text.substr(cut)}), expected) << "cut at " << cut;
  }
}

TEST(WordWrap, MovesWholeWordsToTheNextLine) {
  expect_any_split(10, "the quick brown fox jumps", "the quick\nbrown fox\njumps");
  expect_any_split(11, "the quick brown", "the quick\nbrown");
}

TEST(WordWrap, KeepsNewlinesAndIndentation) {
  expect_any_split(20, "a\n  b c\n\nd", "a\n  b c\n\nd");
  expect_any_split(5, "abc   \nde", "abc\nde");  // spaces before a newline are dropped
}

TEST(WordWrap, BreaksWordsLongerThanALine) {
  expect_any_split(4, "abcdefghij xy", "abcd\nefgh\nij\nxy");
}

TEST(WordWrap, CountsDisplayColumnsNotBytes) {
  // "héllo" is 5 columns in 6 bytes; "日本語" is 6 columns in 9 bytes.
  expect_any_split(11, "héllo héllo héllo", "héllo héllo\nhéllo");
  expect_any_split(7, "日本語 日本語", "日本語\n日本語");
  EXPECT_EQ(display_width("日本語"), 6);
  EXPECT_EQ(display_width("héllo"), 5);
}

TEST(WordWrap, TokensStreamInAsTheyCome) {
  WordWrapper w(12);
  EXPECT_EQ(w.feed("Once"), "");           // the word may still grow
  EXPECT_EQ(w.feed(" upon"), "Once");      // a space ends it
  EXPECT_EQ(w.feed(" a"), " upon");
  EXPECT_EQ(w.feed(" time"), " a");
  EXPECT_EQ(w.feed(" there"), "\ntime");   // "Once upon a time" is 16 columns
  EXPECT_EQ(w.flush(), " there");
}

TEST(WordWrap, FoundByTheFuzzer) {
  // Spaces after a zero-width character never push a line past the edge.
  expect_any_split(4, "\x12 abcd", "\x12" "abcd");
  // A bad byte is one character and cannot swallow the space or newline after it.
  expect_any_split(20, "a\xe2 b\xc3\nc", "a\xe2 b\xc3\nc");
  // A sequence cut off at the very end prints after the word it ends, not before.
  EXPECT_EQ(wrap_all(20, {"ab \xe6\x97"}), "ab \xe6\x97");
  EXPECT_EQ(wrap_all(20, {"ab c\xe6"}), "ab c\xe6");
}

TEST(WordWrap, ZeroWidthPassesThrough) {
  WordWrapper w(0);
  EXPECT_EQ(w.feed("anything at all, however long it is"), "anything at all, however long it is");
  EXPECT_EQ(w.flush(), "");
}

}  // namespace
}  // namespace hearth::cli
