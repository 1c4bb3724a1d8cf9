// TextStreamer: text is released only when it can no longer become part of a stop string or
// of an unfinished UTF-8 character, a stop string split over many pieces is caught, and the
// text ends before the earliest match.
#include "engine/text_streamer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearth::engine {
namespace {

// Pushes the pieces one by one; returns what was emitted after each.
std::vector<std::string> push_all(TextStreamer& s, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(s.push(p));
  return out;
}

TEST(TextStreamer, NoStopsEmitsEachPieceAtOnce) {
  TextStreamer s;
  EXPECT_EQ(push_all(s, {"Once", " upon", " a"}), (std::vector<std::string>{"Once", " upon", " a"}));
  EXPECT_EQ(s.flush(), "");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStreamer, StopStringAcrossPiecesIsHeldBackThenCut) {
  TextStreamer s({"Lily"});
  auto out = push_all(s, {"named", " L", "i", "ly", " and"});
  EXPECT_EQ(out[0], "named");
  EXPECT_EQ(out[1], " ");  // "L" could start "Lily"
  EXPECT_EQ(out[2], "");   // "Li" still could
  EXPECT_EQ(out[3], "");   // "Lily" matched: nothing after the text before it
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.stop_word(), "Lily");
  EXPECT_EQ(out[4], "");  // nothing after a stop
  EXPECT_EQ(s.flush(), "");
}

TEST(TextStreamer, HeldTextIsReleasedWhenTheMatchFails) {
  TextStreamer s({"Lily"});
  EXPECT_EQ(s.push(" Li"), " ");
  EXPECT_EQ(s.held_bytes(), 2u);
  EXPECT_EQ(s.push("on"), "Lion");
  EXPECT_EQ(s.held_bytes(), 0u);
  EXPECT_EQ(s.push(" L"), " ");
  EXPECT_EQ(s.flush(), "L");  // the end releases what was held
}

TEST(TextStreamer, EarliestOfSeveralStopsWins) {
  TextStreamer s({"cat", "the c"});
  EXPECT_EQ(s.push("saw the cat"), "saw ");
  EXPECT_EQ(s.stop_word(), "the c");
  TextStreamer t({"xyz", "at"});
  EXPECT_EQ(t.push("a cat xyz"), "a c");
  EXPECT_EQ(t.stop_word(), "at");
}

TEST(TextStreamer, MatchInsideOnePieceCutsThere) {
  TextStreamer s({"\n\n"});
  EXPECT_EQ(s.push("end.\n\nNext"), "end.");
  EXPECT_TRUE(s.stopped());
}

TEST(TextStreamer, Utf8CharacterSplitAcrossPiecesIsHeldWhole) {
  TextStreamer s;
  // "é" is C3 A9; "€" is E2 82 AC.
  EXPECT_EQ(s.push("caf\xC3"), "caf");
  EXPECT_EQ(s.push("\xA9 "), "\xC3\xA9 ");
  EXPECT_EQ(s.push("\xE2\x82"), "");
  EXPECT_EQ(s.push("\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(s.push("\xE2"), "");
  EXPECT_EQ(s.flush(), "\xE2");  // an unfinished character at the end still comes out
}

TEST(TextStreamer, EmptyStopStringsAreIgnored) {
  TextStreamer s({"", "zz"});
  EXPECT_EQ(s.push("abc"), "abc");
  EXPECT_FALSE(s.stopped());
}

TEST(Utf8CompletePrefix, CutsBeforeAnUnfinishedCharacter) {
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xC3"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98\x80"), 6u);
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
}

}  // namespace
}  // namespace hearth::engine
