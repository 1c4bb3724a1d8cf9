// Which slot takes a new request. Each slot keeps the tokens of its last request in its KV
// sequence (the prefix cache); a new prompt goes to the idle slot whose cached tokens share
// the longest prefix with it, so that prefix is not evaluated again. A match counts only when
// it covers at least `min_similarity` of the prompt; otherwise (or on a tie) the least recently
// used idle slot is taken, which keeps other conversations' caches alive longest. Pure
// functions over token lists, tested without a model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::engine {

struct SlotCacheView {
  int32_t slot = 0;
  bool idle = true;
  std::span<const int32_t> cached;  // tokens whose KV the slot holds, in order
  uint64_t last_used = 0;           // larger is more recent; 0: never used
};

struct SlotChoice {
  int32_t slot = -1;  // -1: no idle slot
  int32_t reuse = 0;  // cached tokens to keep: the common prefix, at most prompt size - 1
};

// Length of the common prefix of a and b.
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// The idle slot for `prompt` (see above). cache_prompt=false: the LRU idle slot, reuse 0.
// A non-empty prompt always leaves at least one token to evaluate (the logits come from it).
SlotChoice choose_slot(std::span<const SlotCacheView> slots, std::span<const int32_t> prompt, bool cache_prompt,
                       float min_similarity);

// The reuse for a given slot (a request that names its slot).
int32_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt, bool cache_prompt);

}  // namespace hearth::engine
