// plan_step: every generating slot gets its decode token, prompt chunks fill the rest of the
// budget oldest first, and a long prompt is spread over steps without ever exceeding it.
#include "engine/batch_planner.h"

#include <gtest/gtest.h>

#include <map>

namespace hearth::engine {
namespace {

int32_t total(const std::vector<SlotShare>& plan) {
  int32_t n = 0;
  for (const auto& s : plan) n += s.n_decode + s.n_prompt;
  return n;
}

TEST(BatchPlanner, DecodeTokensFirstThenPromptChunksByArrival) {
  std::vector<SlotDemand> d = {
      {0, true, 0, 1}, {1, false, 30, 5}, {2, false, 10, 3}, {3, true, 0, 2},
  };
  auto plan = plan_step(d, 16);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].slot, 0);
  EXPECT_EQ(plan[0].n_decode, 1);
  EXPECT_EQ(plan[1].slot, 3);
  EXPECT_EQ(plan[1].n_decode, 1);
  // 14 left: slot 2 (arrived 3) takes its 10, slot 1 (arrived 5) the last 4.
  EXPECT_EQ(plan[2].slot, 2);
  EXPECT_EQ(plan[2].n_prompt, 10);
  EXPECT_EQ(plan[3].slot, 1);
  EXPECT_EQ(plan[3].n_prompt, 4);
  EXPECT_EQ(total(plan), 16);
}

TEST(BatchPlanner, IdleSlotsAndExhaustedBudgetGetNothing) {
  std::vector<SlotDemand> d = {{0, false, 0, 1}, {1, true, 0, 2}, {2, false, 50, 3}, {3, false, 50, 4}};
  auto plan = plan_step(d, 4);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].slot, 1);
  EXPECT_EQ(plan[1].slot, 2);
  EXPECT_EQ(plan[1].n_prompt, 3);
  EXPECT_TRUE(plan_step({}, 8).empty());
}

// Four streams generate while a 200-token prompt arrives: over the steps it takes, every stream
// gets one token per step, no step exceeds the budget, and the prompt is eaten in chunks.
TEST(BatchPlanner, LongPromptIsChunkedAcrossStepsWithoutStallingStreams) {
  const int32_t budget = 32;
  int32_t pending = 200;
  int32_t steps = 0;
  while (pending > 0) {
    std::vector<SlotDemand> d = {{0, true, 0, 1}, {1, true, 0, 2}, {2, true, 0, 3}, {3, true, 0, 4},
                                 {4, false, pending, 5}};
    auto plan = plan_step(d, budget);
    std::map<int32_t, SlotShare> by_slot;
    for (const auto& s : plan) by_slot[s.slot] = s;
    for (int32_t slot = 0; slot < 4; ++slot) EXPECT_EQ(by_slot[slot].n_decode, 1);
    EXPECT_LE(total(plan), budget);
    ASSERT_GT(by_slot[4].n_prompt, 0);
    pending -= by_slot[4].n_prompt;
    ++steps;
  }
  EXPECT_EQ(pending, 0);
  EXPECT_EQ(steps, (200 + 27) / 28);
}

}  // namespace
}  // namespace hearth::engine
