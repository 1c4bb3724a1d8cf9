// Slot choice by prompt-prefix similarity (see slot_choice.h).
#include "engine/slot_choice.h"

#include <algorithm>

namespace hearth::engine {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

int32_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt, bool cache_prompt) {
  if (!cache_prompt || prompt.empty()) return 0;
  const size_t lcp = common_prefix(cached, prompt);
  return static_cast<int32_t>(std::min(lcp, prompt.size() - 1));
}

SlotChoice choose_slot(std::span<const SlotCacheView> slots, std::span<const int32_t> prompt, bool cache_prompt,
                       float min_similarity) {
  const SlotCacheView* best = nullptr;  // longest qualifying prefix
  size_t best_lcp = 0;
  const SlotCacheView* lru = nullptr;
  for (const SlotCacheView& s : slots) {
    if (!s.idle) continue;
    if (lru == nullptr || s.last_used < lru->last_used) lru = &s;
    if (!cache_prompt || prompt.empty()) continue;
    const size_t lcp = common_prefix(s.cached, prompt);
    if (lcp == 0 || static_cast<float>(lcp) < min_similarity * static_cast<float>(prompt.size())) continue;
    if (best == nullptr || lcp > best_lcp || (lcp == best_lcp && s.last_used < best->last_used)) {
      best = &s;
      best_lcp = lcp;
    }
  }
  const SlotCacheView* pick = best != nullptr ? best : lru;
  if (pick == nullptr) return {};
  return {pick->slot, reusable_prefix(pick->cached, prompt, cache_prompt)};
}

}  // namespace hearth::engine
