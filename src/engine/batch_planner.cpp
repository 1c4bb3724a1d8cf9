// Token counts for one step of the serving engine (see batch_planner.h).
#include "engine/batch_planner.h"

#include <algorithm>

namespace hearth::engine {

std::vector<SlotShare> plan_step(std::span<const SlotDemand> demands, int32_t token_budget) {
  std::vector<SlotShare> plan;
  int32_t left = token_budget;
  std::vector<const SlotDemand*> prefilling;
  for (const SlotDemand& d : demands) {
    if (d.decoding) {
      plan.push_back({d.slot, 1, 0});
      --left;
    } else if (d.prompt_pending > 0) {
      prefilling.push_back(&d);
    }
  }
  std::stable_sort(prefilling.begin(), prefilling.end(),
                   [](const SlotDemand* a, const SlotDemand* b) { return a->arrival < b->arrival; });
  for (const SlotDemand* d : prefilling) {
    if (left <= 0) break;
    const int32_t n = std::min({left, d->prompt_pending, d->prompt_stop > 0 ? d->prompt_stop : INT32_MAX});
    plan.push_back({d->slot, 0, n});
    left -= n;
  }
  return plan;
}

}  // namespace hearth::engine
