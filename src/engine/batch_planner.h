// The serving engine's step planner: decides how many tokens each active slot puts into the
// next batch, from token counts alone (it never sees the KV cache or the model, so it is
// tested without one). Every generating slot gets its one decode token first; what is left
// of the step's token budget goes to prompt chunks of prefilling slots, oldest request first
// (chunked prefill: a long prompt is spread over several steps instead of stalling streams).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::engine {

struct SlotDemand {
  int32_t slot = 0;
  bool decoding = false;       // has a sampled token to feed back (generating)
  int32_t prompt_pending = 0;  // prompt tokens not yet evaluated (prefilling)
  uint64_t arrival = 0;        // admission order; smaller is older
  int32_t prompt_stop = 0;     // > 0: the chunk ends within this many tokens (a point where the
                               //   engine publishes the prefix cache before going on)
};

struct SlotShare {
  int32_t slot = 0;
  int32_t n_decode = 0;  // 0 or 1
  int32_t n_prompt = 0;  // prompt tokens in this step
};

// One share per slot that gets tokens, decode shares first (in slot order), then prompt
// chunks by arrival. Decode tokens are never cut: the caller keeps the budget at least as
// large as the number of slots. Slots with nothing to do get no share.
std::vector<SlotShare> plan_step(std::span<const SlotDemand> demands, int32_t token_budget);

}  // namespace hearth::engine
