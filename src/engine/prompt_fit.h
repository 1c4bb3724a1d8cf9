// Fitting a prompt into a slot's context. A prompt that does not fit is an error unless the
// request asks for truncation; then the first n_keep tokens and the newest tail are kept, with
// room left to generate. Never silent: the caller reports how many tokens were dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "util/result.h"

namespace hearth::engine {

struct FittedPrompt {
  std::vector<int32_t> tokens;
  int32_t truncated_n = 0;  // tokens dropped from the middle
};

// Room kept for generation when a prompt is truncated: n_predict when it is positive, else a
// quarter of the context, and never more than half of it (at least 1 token).
int32_t truncation_room(int32_t n_ctx_slot, int32_t n_predict);

// A prompt fits when it leaves at least one position to generate (size < n_ctx_slot).
// Errors (kOutOfRange, with the numbers): too long without truncate; n_keep too large to
// leave any of the tail.
Result<FittedPrompt> fit_prompt(std::vector<int32_t> prompt, int32_t n_ctx_slot, bool truncate, int32_t n_keep,
                                int32_t n_predict);

}  // namespace hearth::engine
