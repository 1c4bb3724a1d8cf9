// Repeat, presence and frequency penalties over the recent token window.
#include <cmath>

#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_penalties(Candidates& c, std::span<const int32_t> recent, float repeat_penalty, float presence_penalty,
                     float frequency_penalty, std::vector<uint32_t>& counts) {
  if (recent.empty() || (repeat_penalty == 1.0f && presence_penalty == 0.0f && frequency_penalty == 0.0f)) return;
  for (int32_t t : recent) {
    if (t >= 0 && static_cast<size_t>(t) < counts.size()) counts[static_cast<size_t>(t)]++;
  }
  for (auto& cand : c) {
    uint32_t n = counts[static_cast<size_t>(cand.id)];
    if (n == 0) continue;
    if (cand.logit > 0) {
      cand.logit /= repeat_penalty;
    } else {
      cand.logit *= repeat_penalty;
    }
    cand.logit -= static_cast<float>(n) * frequency_penalty + presence_penalty;
  }
  for (int32_t t : recent) {
    if (t >= 0 && static_cast<size_t>(t) < counts.size()) counts[static_cast<size_t>(t)] = 0;
  }
  c.sorted = false;
  c.probs_valid = false;
}

}  // namespace hearth::sampler
