// XTC ("exclude top choices"): sometimes removes the most likely tokens so that a less
// obvious, still plausible one is chosen.
#include <random>

#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_xtc(Candidates& c, float probability, float threshold, size_t min_keep, std::mt19937_64& rng) {
  if (probability <= 0.0f || threshold > 0.5f || c.size < 2) return;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (uniform(rng) >= probability) return;
  c.sort_desc();
  c.softmax();
  size_t above = 0;
  while (above < c.size && c.items[above].p >= threshold) ++above;
  if (above < 2) return;
  // Keep the last token above the threshold and everything below it.
  size_t drop = above - 1;
  if (c.size - drop < min_keep) return;
  for (size_t i = drop; i < c.size; ++i) c.items[i - drop] = c.items[i];
  c.size -= drop;
  c.probs_valid = false;
}

}  // namespace hearth::sampler
