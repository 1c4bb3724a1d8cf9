// ThinkingBudget: counts the tokens after the opening marker (also when it arrives split over
// tokens, or the prompt already opened it), is due once when the count reaches the budget, and
// never after the model closed the reasoning itself.
#include <gtest/gtest.h>

#include "engine/thinking_budget.h"

namespace hearth::engine {
namespace {

TEST(ThinkingBudget, DueAfterBudgetTokensOfReasoning) {
  ThinkingBudget b(3, /*open_at_start=*/false, "<think>", "</think>");
  EXPECT_FALSE(b.due());
  b.on_token("Hi <thi");
  b.on_token("nk>");  // the opener, split: not counted
  EXPECT_TRUE(b.inside());
  b.on_token("a");
  b.on_token("b");
  EXPECT_FALSE(b.due());
  b.on_token("c");
  EXPECT_TRUE(b.due());
  EXPECT_FALSE(b.due());  // once
  EXPECT_EQ(b.reasoning_tokens(), 3);
}

TEST(ThinkingBudget, OpenAtStartAndZeroBudgetIsDueAtOnce) {
  ThinkingBudget b(0, /*open_at_start=*/true, "<think>", "</think>");
  EXPECT_TRUE(b.due());
}

TEST(ThinkingBudget, NeverDueOnceTheModelClosedIt) {
  ThinkingBudget b(2, /*open_at_start=*/true, "<think>", "</think>");
  b.on_token("x</th");
  b.on_token("ink>");
  EXPECT_FALSE(b.inside());
  b.on_token("answer");
  b.on_token("more");
  EXPECT_FALSE(b.due());
}

TEST(ThinkingBudget, NoBudgetIsNeverDue) {
  ThinkingBudget off;
  off.on_token("<think>");
  for (int i = 0; i < 10; ++i) off.on_token("t");
  EXPECT_FALSE(off.due());
  ThinkingBudget negative(-1, true, "<think>", "</think>");
  EXPECT_FALSE(negative.due());
}

TEST(ThinkingBudget, WithoutABudgetTheReasoningIsStillTrackedAndCounted) {
  ThinkingBudget t(-1, /*open_at_start=*/false, "<think>", "</think>");
  t.on_token("<think>");
  EXPECT_TRUE(t.inside());
  for (int i = 0; i < 4; ++i) t.on_token("t");
  EXPECT_FALSE(t.due());
  t.on_token("</think>");  // the closing token is part of the reasoning
  EXPECT_FALSE(t.inside());
  t.on_token("answer");
  EXPECT_EQ(t.reasoning_tokens(), 5);
  // gpt-oss: the analysis message.
  ThinkingBudget h(-1, false, "<|channel|>analysis<|message|>", "<|end|>");
  h.on_token("<|channel|>");
  h.on_token("analysis");
  h.on_token("<|message|>");
  h.on_token("hm");
  h.on_token("<|end|>");
  h.on_token("<|start|>");
  EXPECT_EQ(h.reasoning_tokens(), 2);
  EXPECT_FALSE(h.inside());
}

}  // namespace
}  // namespace hearth::engine
