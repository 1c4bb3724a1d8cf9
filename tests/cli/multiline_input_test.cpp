// `"""` multi-line input assembly.
#include <gtest/gtest.h>

#include "cli/multiline_input.h"

namespace hearth::cli {
namespace {

TEST(MultilineInput, PlainLinesPassThrough) {
  MultilineAssembler m;
  EXPECT_EQ(m.feed("hello"), "hello");
  EXPECT_EQ(m.feed("say \"\"\" here"), "say \"\"\" here");  // quotes not at the start
  EXPECT_FALSE(m.open());
}

TEST(MultilineInput, BlockJoinsLinesWithNewlines) {
  MultilineAssembler m;
  EXPECT_EQ(m.feed("\"\"\"Once upon"), std::nullopt);
  EXPECT_TRUE(m.open());
  EXPECT_EQ(m.feed("a time"), std::nullopt);
  EXPECT_EQ(m.feed(""), std::nullopt);
  EXPECT_EQ(m.feed("the end\"\"\""), "Once upon\na time\n\nthe end");
  EXPECT_FALSE(m.open());
}

TEST(MultilineInput, BareOpeningAndOneLineBlocks) {
  MultilineAssembler m;
  EXPECT_EQ(m.feed("\"\"\""), std::nullopt);
  EXPECT_EQ(m.feed("first"), std::nullopt);
  EXPECT_EQ(m.feed("\"\"\""), "first\n");
  EXPECT_EQ(m.feed("\"\"\"just one\"\"\""), "just one");
}

TEST(MultilineInput, SetSystemTakesABlock) {
  MultilineAssembler m;
  EXPECT_EQ(m.feed("/set system \"\"\"You are"), std::nullopt);
  EXPECT_EQ(m.feed("terse.\"\"\""), "/set system You are\nterse.");
}

TEST(MultilineInput, ResetDropsAnOpenBlock) {
  MultilineAssembler m;
  EXPECT_EQ(m.feed("\"\"\"abc"), std::nullopt);
  m.reset();
  EXPECT_FALSE(m.open());
  EXPECT_EQ(m.feed("next"), "next");
}

}  // namespace
}  // namespace hearth::cli
