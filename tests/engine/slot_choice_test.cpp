// Slot choice by cached prefix and prompt fitting/truncation, without a model.
#include "engine/slot_choice.h"

#include <gtest/gtest.h>

#include "engine/prompt_fit.h"

namespace hearth::engine {
namespace {

TEST(SlotChoice, LongestQualifyingPrefixWinsAndKeepsOneTokenToEvaluate) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> b = {1, 2, 9};
  std::vector<int32_t> empty;
  std::vector<SlotCacheView> slots = {{0, true, a, 5}, {1, true, b, 3}, {2, true, empty, 0}};
  std::vector<int32_t> prompt = {1, 2, 3, 4, 7};
  auto c = choose_slot(slots, prompt, true, 0.5f);
  EXPECT_EQ(c.slot, 0);
  EXPECT_EQ(c.reuse, 4);
  // The whole prompt cached: one token is still evaluated to get logits.
  std::vector<int32_t> same = {1, 2, 3};
  c = choose_slot(slots, same, true, 0.5f);
  EXPECT_EQ(c.slot, 0);  // lcp 3 in slot 0, 2 in slot 1
  EXPECT_EQ(c.reuse, 2);
}

TEST(SlotChoice, WeakMatchFallsBackToLeastRecentlyUsed) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> empty;
  std::vector<SlotCacheView> slots = {{0, true, a, 5}, {1, true, empty, 0}};
  // Only BOS shared out of 6 tokens: below 0.5, so the empty (never used) slot is taken.
  std::vector<int32_t> prompt = {1, 8, 9, 10, 11, 12};
  auto c = choose_slot(slots, prompt, true, 0.5f);
  EXPECT_EQ(c.slot, 1);
  EXPECT_EQ(c.reuse, 0);
  // cache_prompt=false: LRU, nothing reused even where it would match.
  slots[1].idle = false;
  c = choose_slot(slots, std::vector<int32_t>{1, 2, 3, 4}, false, 0.5f);
  EXPECT_EQ(c.slot, 0);
  EXPECT_EQ(c.reuse, 0);
}

TEST(SlotChoice, BusySlotsAreNeverChosen) {
  std::vector<int32_t> a = {1, 2, 3};
  std::vector<SlotCacheView> slots = {{0, false, a, 1}, {1, false, a, 2}};
  EXPECT_EQ(choose_slot(slots, a, true, 0.0f).slot, -1);
  EXPECT_EQ(reusable_prefix(a, std::vector<int32_t>{1, 2, 5, 6}, true), 2);
  EXPECT_EQ(reusable_prefix(a, std::vector<int32_t>{1, 2, 5, 6}, false), 0);
}

TEST(PromptFit, FittingPromptIsUntouchedAndLongOneIsAnErrorWithTheNumbers) {
  std::vector<int32_t> p(10, 7);
  auto r = fit_prompt(p, 11, false, 0, -1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens.size(), 10u);
  EXPECT_EQ(r->truncated_n, 0);
  auto e = fit_prompt(p, 10, false, 0, -1);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::kOutOfRange);
  EXPECT_NE(e.error().message.find("10 tokens"), std::string::npos) << e.error().message;
}

TEST(PromptFit, TruncationKeepsTheHeadAndTheNewestTailWithRoomToGenerate) {
  std::vector<int32_t> p;
  for (int32_t i = 0; i < 100; ++i) p.push_back(i);
  auto r = fit_prompt(p, 64, true, 4, 8);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->tokens.size(), 56u);  // 64 - 8 for generation
  EXPECT_EQ(r->truncated_n, 44);
  EXPECT_EQ(r->tokens[3], 3);
  EXPECT_EQ(r->tokens[4], 48);  // the tail: tokens 48..99
  EXPECT_EQ(r->tokens.back(), 99);
  // n_predict unlimited: a quarter of the context is left.
  EXPECT_EQ(fit_prompt(p, 64, true, 0, -1)->tokens.size(), 48u);
  EXPECT_EQ(truncation_room(64, 1000), 32);
  // n_keep that leaves no tail is an error, not a silent cut.
  auto e = fit_prompt(p, 64, true, 60, 8);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("n_keep"), std::string::npos);
}

}  // namespace
}  // namespace hearth::engine
