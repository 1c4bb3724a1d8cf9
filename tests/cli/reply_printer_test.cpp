// How a streamed reply is printed: thinking between its markers (or hidden), the answer
// wrapped, chunks of /api/chat and /api/generate alike.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/reply_printer.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

TEST(ReplyPrinter, ThinkingThenAnswer) {
  std::ostringstream out;
  ReplyPrinter p(out, 0, false, false);
  p.on_chunk(Json{{"message", {{"role", "assistant"}, {"content", ""}, {"thinking", "Let me see."}}}});
  p.on_chunk(Json{{"message", {{"role", "assistant"}, {"content", "Four."}}}});
  p.on_chunk(Json{{"done", true}, {"message", {{"role", "assistant"}, {"content", ""}}}});
  p.finish();
  EXPECT_EQ(out.str(), "Thinking...\nLet me see.\n...done thinking.\n\nFour.");
  EXPECT_EQ(p.content(), "Four.");
  EXPECT_EQ(p.thinking(), "Let me see.");
}

TEST(ReplyPrinter, HiddenThinkingAndGenerateChunks) {
  std::ostringstream out;
  ReplyPrinter p(out, 0, true, true);
  p.on_chunk(Json{{"thinking", "hmm"}, {"response", ""}});
  p.on_chunk(Json{{"response", "Yes"}});
  p.finish();
  EXPECT_EQ(out.str(), "Yes");
  EXPECT_EQ(p.thinking(), "hmm");
}

TEST(ReplyPrinter, ColouredThinkingAndWrappedAnswer) {
  std::ostringstream out;
  ReplyPrinter p(out, 10, false, true);
  p.on_chunk(Json{{"thinking", "a"}});
  p.on_chunk(Json{{"response", "one two three"}});
  p.finish();
  EXPECT_EQ(out.str(), "\x1b[90mThinking...\na\n...done thinking.\n\n\x1b[0mone two\nthree");
}

TEST(ReplyPrinter, InterruptedReplyDropsTheHeldWord) {
  std::ostringstream out;
  ReplyPrinter p(out, 40, false, false);
  p.on_chunk(Json{{"response", "Once upon a ti"}});
  p.finish(false);
  EXPECT_EQ(out.str(), "Once upon a");
}

}  // namespace
}  // namespace hearth::cli
